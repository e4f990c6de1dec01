import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AbortedError } from '../../src/errors.js';
import type { OutboundEvent, Sink } from '../../src/sinkContract/sink.js';
import { SinkUnavailableError } from '../../src/sinkContract/sinkErrors.js';
import { createSink, sinkConfigSchema } from '../../src/sinks/sinkRegistry.js';
import { rejection } from '../support/rejection.js';

// Every sink reports an abort the same way: an AbortedError naming what was aborted, whatever
// reason the signal carries (a client library may reject with the reason itself).

let receiver: Server;
let receiverPort = 0;
beforeAll(async () => {
  receiver = createServer((_req, res) => res.end());
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverPort = (receiver.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((resolve) => receiver.close(() => resolve())));

const cases: { type: string; config: () => Record<string, unknown>; names: RegExp }[] = [
  { type: 'nats', config: () => ({}), names: /NATS at nats:\/\/127\.0\.0\.1:4222/ },
  {
    type: 'rabbitmq',
    config: () => ({ exchange: { name: 'amq.topic' } }),
    names: /RabbitMQ at amqp:\/\/127\.0\.0\.1:5672/,
  },
  { type: 'redis-streams', config: () => ({}), names: /Redis at redis:\/\/127\.0\.0\.1:6379\/0/ },
  { type: 'mqtt', config: () => ({}), names: /the MQTT broker at mqtt:\/\/127\.0\.0\.1:1883/ },
  { type: 'webhook', config: () => ({ url: `http://127.0.0.1:${receiverPort}/hook` }), names: /127\.0\.0\.1:\d+/ },
];

const event: OutboundEvent = {
  seq: 1,
  tenant: 'default',
  id: 'evt_abort',
  type: 'com.skills.changefeed.career.level_added',
  log: 'career',
  objectId: 'car_1',
  orderingKey: 'career:car_1',
  json: '{"specversion":"1.0","id":"evt_abort"}',
  attempt: 1,
};

function aborted(): AbortSignal {
  const controller = new AbortController();
  controller.abort(new Error('shutting down'));
  return controller.signal;
}

function sinkOf(type: string, config: Record<string, unknown>): Sink {
  return createSink(sinkConfigSchema.parse({ name: `abort-${type}`, type, ...config }));
}

describe.each(cases)('$type sink on abort', ({ type, config, names }) => {
  let skipReason: string | undefined;
  beforeAll(async () => {
    const probe = sinkOf(type, config());
    try {
      await probe.connect(new AbortController().signal);
    } catch (error) {
      if (!(error instanceof SinkUnavailableError)) throw error;
      skipReason = error.message;
      if (process.env.CI) throw new Error(`${skipReason} (CI is set: broker tests must not be skipped)`);
    } finally {
      await probe.close();
    }
  });

  it('connect throws an AbortedError naming what was aborted', async (ctx) => {
    if (skipReason) return ctx.skip();
    const sink = sinkOf(type, config());
    try {
      const { error } = await rejection(sink.connect(aborted()));
      expect(error).toBeInstanceOf(AbortedError);
      expect(error.message).toMatch(names);
      expect(error.message).toMatch(/aborted$/);
    } finally {
      await sink.close();
    }
  });

  it('write throws an AbortedError naming what was aborted', async (ctx) => {
    if (skipReason) return ctx.skip();
    const sink = sinkOf(type, config());
    try {
      await sink.connect(new AbortController().signal);
      const { error } = await rejection(sink.write([event], aborted()));
      expect(error).toBeInstanceOf(AbortedError);
      expect(error.message).toMatch(names);
      expect(error.message).toMatch(/aborted$/);
    } finally {
      await sink.close();
    }
  });
});
