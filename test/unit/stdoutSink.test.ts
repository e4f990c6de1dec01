import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { buildCloudEvent } from '../../src/events/cloudEvent.js';
import type { ActivityEntry } from '../../src/api/activityEntry.js';
import type { LogKind } from '../../src/logs.js';
import type { OutboundEvent } from '../../src/sinkContract/sink.js';
import { StdoutSink, prettyLine, stdoutSinkConfigSchema } from '../../src/sinks/stdoutSink.js';
import { BASE_URL, EVENTS } from './scriptedSink.js';

function outbound(log: LogKind, objectId: string, entry: ActivityEntry): OutboundEvent {
  const event = buildCloudEvent({ tenant: 'default', log, objectId, baseUrl: BASE_URL, entry }, EVENTS);
  return {
    seq: 1,
    tenant: 'default',
    id: event.id,
    type: event.type,
    log,
    objectId,
    orderingKey: `${log}:${objectId}`,
    json: JSON.stringify(event),
    attempt: 1,
  };
}

async function written(format: 'json' | 'pretty', batch: OutboundEvent[]): Promise<string> {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (chunk: Buffer) => chunks.push(chunk));
  const sink = new StdoutSink(stdoutSinkConfigSchema.parse({ name: 'console', type: 'stdout', format }), out);
  await sink.connect();
  await sink.write(batch);
  await sink.close();
  return Buffer.concat(chunks).toString('utf8');
}

const career = outbound('career', 'c-17', {
  id: 'e-1',
  event: 'level_added',
  description: 'Added level Senior',
  performedById: 'p-3',
  performedAt: '2026-03-01T12:04:31+02:00',
});
const idp = outbound('identity_provider', '', {
  id: 'i-1',
  event: 'user_created',
  description: null,
  performedById: null,
  performedAt: null,
});

describe('StdoutSink', () => {
  it('writes one CloudEvent JSON per line in json format, exactly as stored', async () => {
    expect(await written('json', [career, idp])).toBe(`${career.json}\n${idp.json}\n`);
  });

  it('is json by default', () => {
    expect(stdoutSinkConfigSchema.parse({ name: 'console', type: 'stdout' }).format).toBe('json');
  });

  it('writes one readable line per event in pretty format', async () => {
    expect(await written('pretty', [career, idp])).toBe(
      '10:04:31  career c-17  level_added  "Added level Senior"  by p-3\n--:--:--  identity provider  user_created\n',
    );
  });

  it('shows the event name of an entry without event as the configured null name', () => {
    expect(prettyLine(outbound('skill', 's-1', { id: 'e-2', event: null, performedAt: '2026-03-01T00:00:09Z' }))).toBe(
      '00:00:09  skill s-1  unspecified',
    );
  });
});
