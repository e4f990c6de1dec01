import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CloudEvent } from 'cloudevents';
import { describe, expect, it } from 'vitest';
import { SinkWorker } from '../../src/deliver/sinkWorker.js';
import { buildCloudEvent } from '../../src/events/cloudEvent.js';
import { noopLogger } from '../support/noopLogger.js';
import { FileSink, fileSinkConfigSchema } from '../../src/sinks/fileSink.js';
import type { OutboundEvent } from '../../src/sinkContract/sink.js';
import { SinkUnavailableError } from '../../src/sinkContract/sinkErrors.js';
import { readJsonLines } from '../support/jsonLines.js';
import { makeTempDir } from '../support/tempDir.js';
import { withVirtualTime } from '../support/virtualTime.js';
import { BASE_URL, EVENTS, START, ingestEntries, openStore, testClock, testDelivery } from './scriptedSink.js';

const fileSink = (path: string) => new FileSink(fileSinkConfigSchema.parse({ name: 'file', type: 'file', path }));

function outbound(entryId: string, seq: number): OutboundEvent {
  const event = buildCloudEvent(
    {
      tenant: 'default',
      log: 'career',
      objectId: 'c-1',
      baseUrl: BASE_URL,
      entry: { id: entryId, event: 'level_added', note: 'ünïcode ✓' },
    },
    EVENTS,
  );
  return {
    seq,
    tenant: 'default',
    id: event.id,
    type: event.type,
    log: 'career',
    objectId: 'c-1',
    orderingKey: 'career:c-1',
    json: JSON.stringify(event),
    attempt: 1,
  };
}

describe('FileSink', () => {
  it('appends each batch as JSON lines, byte for byte the stored CloudEvent', async () => {
    const path = join(makeTempDir(), 'nested', 'dir', 'events.jsonl');
    const sink = fileSink(path);
    await sink.connect();
    const batch = [outbound('e-1', 1), outbound('e-2', 2)];
    await sink.write(batch);
    await sink.write([outbound('e-3', 3)]);
    // Written means on disk: readable before close.
    expect(readFileSync(path, 'utf8')).toBe(`${batch[0]!.json}\n${batch[1]!.json}\n${outbound('e-3', 3).json}\n`);
    await sink.close();
    expect(readJsonLines<{ entryid: string }>(path).map((e) => e.entryid)).toEqual(['e-1', 'e-2', 'e-3']);
  });

  it('appends to an existing file instead of replacing it', async () => {
    const path = join(makeTempDir(), 'events.jsonl');
    writeFileSync(path, '{"earlier":true}\n');
    const sink = fileSink(path);
    await sink.connect();
    await sink.write([outbound('e-1', 1)]);
    await sink.close();
    expect(readJsonLines(path)).toHaveLength(2);
  });

  it('cuts a line torn by a crash before appending, so the file stays valid JSON Lines', async () => {
    const path = join(makeTempDir(), 'events.jsonl');
    writeFileSync(path, '{"whole":1}\n{"torn":');
    const sink = fileSink(path);
    await sink.connect();
    await sink.write([outbound('e-1', 1)]);
    await sink.close();
    expect(readFileSync(path, 'utf8')).toBe(`{"whole":1}\n${outbound('e-1', 1).json}\n`);
  });

  it('reports writing before connecting, or a path it cannot open, as SinkUnavailableError', async () => {
    const dir = makeTempDir();
    await expect(fileSink(join(dir, 'x.jsonl')).write([outbound('e-1', 1)])).rejects.toBeInstanceOf(
      SinkUnavailableError,
    );
    mkdirSync(join(dir, 'a-directory'));
    await expect(fileSink(join(dir, 'a-directory')).connect()).rejects.toThrow(
      /cannot open .*a-directory for appending/,
    );
  });

  it('receives what a worker delivers from the store: valid CloudEvents, each object in order', async () => {
    const dir = makeTempDir();
    const clock = testClock();
    const store = await openStore(join(dir, 's.sqlite'), ['file']);
    const c1 = await ingestEntries(store, 'career', 'c-1', ['a', 'b', 'c']);
    const idp = await ingestEntries(store, 'identity_provider', '', ['x']);
    const path = join(dir, 'out', 'events.jsonl');
    const sink = fileSink(path);
    const worker = new SinkWorker({
      sink,
      store,
      clock,
      logger: noopLogger,
      delivery: testDelivery({
        retry: { initialDelayMs: 1_000, maxDelayMs: 1_000, maxAttempts: 0, maxAgeSeconds: 0 },
        batchSize: 2,
      }),
      random: () => 0.5,
    });
    await withVirtualTime(clock, worker.run(new AbortController().signal, { deadline: START + 60_000 }));
    expect((await store.outbox.counts(worker.name)).pending).toBe(0);
    await worker.close();
    const lines = readJsonLines<Record<string, unknown>>(path);
    const ids = lines.map((e) => e.id as string);
    expect([...ids].sort()).toEqual([...c1, ...idp].sort());
    expect(ids.filter((id) => c1.includes(id))).toEqual(c1);
    for (const line of lines) expect(new CloudEvent(line).validate()).toBe(true);
    await store.close();
  });
});
