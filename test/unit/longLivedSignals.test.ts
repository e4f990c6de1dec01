import { getEventListeners } from 'node:events';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { IN_FLIGHT, WorkerWake } from '../../src/deliver/sinkWorker.js';
import type { OutboundEvent } from '../../src/sinkContract/sink.js';
import { createSink, sinkConfigSchema } from '../../src/sinks/sinkRegistry.js';
import { clientFor, LoopbackService, RecordingGate } from './loopbackService.js';

// A tenant's stop signal and a sink worker's signal live as long as the daemon. Whatever each
// request, write or pause ties to them must be untied when it is over: on Node 20 every
// AbortSignal.any() call left a WeakRef in the long-lived signal's set of followers, for good
// (nodejs/node#55351). At 1,000 tenants that was about 650 MB an hour.

const ROUNDS = 25;

/** How many signals follow `signal` (Node's own bookkeeping of AbortSignal.any). */
function followers(signal: AbortSignal): number {
  const key = Object.getOwnPropertySymbols(signal).find((s) => s.description === 'kDependantSignals');
  const set = key === undefined ? undefined : (signal as unknown as Record<symbol, Set<unknown> | undefined>)[key];
  return set?.size ?? 0;
}

function expectNothingTiedTo(signal: AbortSignal): void {
  expect(followers(signal)).toBe(0);
  expect(getEventListeners(signal, 'abort')).toHaveLength(0);
}

describe('nothing accumulates on a long-lived signal', () => {
  it('the probe sees what AbortSignal.any leaves behind (so the checks below can fail)', () => {
    const longLived = new AbortController().signal;
    for (let i = 0; i < ROUNDS; i++) AbortSignal.any([longLived, new AbortController().signal]);
    expect(followers(longLived)).toBe(ROUNDS);
  });

  it('the service client, request after request', async () => {
    const service = await LoopbackService.start(() => ({ status: 200, body: { data: [] } }));
    const client = clientFor(service.url, new RecordingGate());
    const tenant = new AbortController().signal;
    for (let i = 0; i < ROUNDS; i++) await client.getJson('/api/v1/careers', {}, 'poll', tenant);
    expect(service.requests).toHaveLength(ROUNDS);
    expectNothingTiedTo(tenant);
  });

  it('a sink worker pausing, for a time or for its writes in flight, ties nothing to a signal', async () => {
    const wake = new WorkerWake(systemClock);
    for (let i = 0; i < ROUNDS; i++) {
      await wake.pause(1);
      // A write in flight notifies as it settles.
      const settling = Promise.resolve().then(() => wake.notify());
      await wake.pause(IN_FLIGHT);
      await settling;
      wake.reading();
    }
    // A notify while nothing waits ends the next pause at once, however long.
    wake.notify();
    await wake.pause(3_600_000);
  });

  describe('the webhook sink, write after write', () => {
    let receiver: Server;
    let port = 0;
    beforeAll(async () => {
      receiver = createServer((_req, res) => res.end());
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
      port = (receiver.address() as { port: number }).port;
    });
    afterAll(() => new Promise<void>((resolve) => receiver.close(() => resolve())));

    it('leaves nothing on the worker signal', async () => {
      const sink = createSink(
        sinkConfigSchema.parse({ name: 'hook', type: 'webhook', url: `http://127.0.0.1:${port}/hook` }),
      );
      const worker = new AbortController().signal;
      await sink.connect(worker);
      try {
        for (let i = 0; i < ROUNDS; i++) await sink.write([event(i)], worker);
      } finally {
        await sink.close();
      }
      expectNothingTiedTo(worker);
    });
  });
});

function event(seq: number): OutboundEvent {
  return {
    seq,
    tenant: 'default',
    id: `evt_${seq}`,
    type: 'com.skills.changefeed.career.level_added',
    log: 'career',
    objectId: 'car_1',
    orderingKey: 'career:car_1',
    json: `{"specversion":"1.0","id":"evt_${seq}"}`,
    attempt: 1,
  };
}
