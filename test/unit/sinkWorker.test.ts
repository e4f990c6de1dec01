import { defaultMaxListeners, getEventListeners, getMaxListeners } from 'node:events';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { SinkWorker } from '../../src/deliver/sinkWorker.js';
import type { RetryConfig } from '../../src/sinkContract/deliveryConfig.js';
import { noopLogger } from '../support/noopLogger.js';
import {
  SinkBackoffError,
  SinkPartialFailureError,
  SinkRejectedError,
  SinkUnavailableError,
} from '../../src/sinkContract/sinkErrors.js';
import type { SqliteChangefeedStore } from '../../src/store/sqlite/sqliteStore.js';
import type { ManualClock } from '../support/manualClock.js';
import { makeTempDir } from '../support/tempDir.js';
import { withVirtualTime } from '../support/virtualTime.js';
import {
  ScriptedSink,
  START,
  ingestEntries,
  openStore,
  testClock,
  testDelivery,
  type WriteScript,
} from './scriptedSink.js';
import { openSqliteStoreFile } from '../support/sqliteStoreFile.js';

const RETRY: RetryConfig = { initialDelayMs: 1_000, maxDelayMs: 60_000, maxAttempts: 0, maxAgeSeconds: 0 };

function worker(
  store: SqliteChangefeedStore,
  sink: ScriptedSink,
  clock: ManualClock,
  over: { retry?: Partial<RetryConfig>; batchSize?: number; maxInFlight?: number } = {},
) {
  return new SinkWorker({
    sink,
    store,
    clock,
    logger: noopLogger,
    delivery: testDelivery({
      retry: { ...RETRY, ...over.retry },
      batchSize: over.batchSize ?? 10,
      maxInFlight: over.maxInFlight ?? 1,
    }),
    random: () => 0.5,
  });
}

async function setup(script?: WriteScript) {
  const file = join(makeTempDir(), 's.sqlite');
  const clock = testClock();
  const store = await openStore(file, ['out']);
  const sink = new ScriptedSink('out', script, clock);
  /** Runs `w` as `run --once` does; true when nothing is left pending. */
  const drain = async (w: SinkWorker, forMs = 3_600_000) => {
    await withVirtualTime(clock, w.run(new AbortController().signal, { deadline: clock.now() + forMs }));
    return (await store.outbox.counts('out')).pending === 0;
  };
  return { file, clock, store, sink, drain };
}

interface DeliveryRow {
  event_id: string;
  state: string;
  attempts: number;
  next_attempt_at: number;
  first_attempt_at: number | null;
  last_error: string | null;
}
const deliveryOf = (store: SqliteChangefeedStore, eventId: string): DeliveryRow =>
  store.db
    .prepare<[string], DeliveryRow>(
      `SELECT e.event_id, d.state, d.attempts, d.next_attempt_at, d.first_attempt_at, d.last_error
       FROM deliveries d JOIN events e ON e.seq = d.seq WHERE d.sink = 'out' AND e.event_id = ?`,
    )
    .get(eventId)!;

/** Ids in the order the destination last received them: a re-sent event counts where it was re-sent. */
const lastCopies = (accepted: readonly string[]): string[] =>
  accepted.filter((id, i) => accepted.indexOf(id, i + 1) === -1);
const only = (ids: readonly string[], of: readonly string[]) => ids.filter((id) => of.includes(id));
const failWhen = (eventId: string, times: number, error: () => Error): WriteScript => {
  let failures = 0;
  return (batch) => {
    if (failures < times && batch.some((e) => e.id === eventId)) {
      failures++;
      throw error();
    }
  };
};

describe('SinkWorker with a real store', () => {
  it("sends a caught-up sink's next rows with the payloads its outbox read carried, reading them apart only past its first 100", async () => {
    const { store, sink, clock, drain } = await setup();
    const ids = await ingestEntries(
      store,
      'career',
      'c-1',
      Array.from({ length: 150 }, (_, i) => `e-${i}`),
    );
    const payloadReads = vi.spyOn(store.outbox, 'payloads');
    expect(await drain(worker(store, sink, clock, { batchSize: 10 }))).toBe(true);
    expect(sink.accepted).toEqual(ids);
    // The first 100 rows came with their payloads; the 5 batches after them read theirs.
    expect(payloadReads).toHaveBeenCalledTimes(5);

    // Caught up: a new event is read with its payload and sent, with no read of its own.
    const [late] = await ingestEntries(store, 'career', 'c-1', ['late'], START + 1_000);
    expect(await drain(worker(store, sink, clock))).toBe(true);
    expect(sink.accepted.at(-1)).toBe(late);
    expect(payloadReads).toHaveBeenCalledTimes(5);
    await store.close();
  });

  it('delivers everything once, each object in ingestion order, across several batches', async () => {
    const { store, sink, clock, drain } = await setup();
    const c1 = await ingestEntries(store, 'career', 'c-1', ['a', 'b', 'c']);
    const idp = await ingestEntries(store, 'identity_provider', '', ['x', 'y']);
    const c2 = await ingestEntries(store, 'career', 'c-2', ['a', 'b', 'c', 'd']);
    const s1 = await ingestEntries(store, 'skill', 's-1', ['a']);
    expect(await drain(worker(store, sink, clock, { batchSize: 2, maxInFlight: 3 }))).toBe(true);
    expect([...sink.accepted].sort()).toEqual([...c1, ...idp, ...c2, ...s1].sort());
    for (const key of [c1, idp, c2, s1]) expect(only(sink.accepted, key)).toEqual(key);
    for (const batch of sink.batches) expect(batch.length).toBeLessThanOrEqual(2);
    expect(await store.outbox.counts('out')).toMatchObject({ pending: 0, delivered: 10, dead: 0 });
    expect(deliveryOf(store, c2[3]!)).toMatchObject({
      state: 'delivered',
      attempts: 1,
      first_attempt_at: START,
      last_error: null,
    });
    await store.close();
  });

  it('sends a batch once when the outbox is read again while its acknowledgement is under way', async () => {
    const { store, sink, clock } = await setup();
    const ids = await ingestEntries(store, 'career', 'c-1', ['a']);
    // The first acknowledgement waits until the worker has read the outbox again: the row is
    // still pending in the store then, as it is while a real commit is under way.
    const markDelivered = store.outbox.markDelivered.bind(store.outbox);
    const pending = store.outbox.pending.bind(store.outbox);
    let acknowledging: (() => void) | undefined;
    let readDuringAck = false;
    store.outbox.pending = async (...args) => {
      const rows = await pending(...args);
      if (acknowledging) {
        readDuringAck = true;
        acknowledging();
      }
      return rows;
    };
    let acks = 0;
    store.outbox.markDelivered = async (...args) => {
      if (acks++ === 0)
        await new Promise<void>((resolve) => {
          acknowledging = resolve;
          w.notify();
        });
      acknowledging = undefined;
      return markDelivered(...args);
    };
    // Room for a second write, so the worker reads the outbox while the first is acknowledged.
    const w = worker(store, sink, clock, { maxInFlight: 2 });
    const stop = new AbortController();
    const running = w.run(stop.signal);
    // Done once nothing is pending and the worker sleeps on the clock, having nothing to send.
    while ((await store.outbox.counts('out')).pending > 0 || clock.nextWakeAt() === undefined)
      await new Promise((resolve) => setImmediate(resolve));
    stop.abort();
    await running;
    expect(readDuringAck).toBe(true);
    expect(sink.writes).toEqual([ids]);
    await store.close();
  });

  it('never has two writes of one object in flight at once, while writing several objects in parallel', async () => {
    const { store, sink, clock, drain } = await setup();
    sink.latencyMs = 2;
    const keys: string[][] = [];
    for (const id of ['c-1', 'c-2', 'c-3']) keys.push(await ingestEntries(store, 'career', id, ['a', 'b', 'c', 'd']));
    expect(await drain(worker(store, sink, clock, { batchSize: 1, maxInFlight: 3 }))).toBe(true);
    expect(sink.maxConcurrentWrites).toBe(3);
    expect(sink.overlappingKeys).toEqual([]);
    for (const ids of keys) expect(only(sink.accepted, ids)).toEqual(ids);
    expect(sink.accepted).toHaveLength(12);
    await store.close();
  });

  it('many writes in flight listen on one signal without a listener-leak warning, in run and in drain', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(`${w.name}: ${w.message}`);
    process.on('warning', onWarning);
    try {
      const { store, sink, clock, drain } = await setup();
      sink.latencyMs = 20;
      sink.limits.maxInFlight = 32;
      for (let i = 0; i < 32; i++) await ingestEntries(store, 'career', `c-${i}`, ['a', 'b']);
      expect(await drain(worker(store, sink, clock, { batchSize: 1, maxInFlight: 32 }))).toBe(true);
      expect(sink.maxConcurrentWrites).toBe(32);
      for (let i = 0; i < 32; i++) await ingestEntries(store, 'career', `d-${i}`, ['a']);
      const running = new AbortController();
      const w = worker(store, sink, clock, { batchSize: 1, maxInFlight: 32 });
      const run = withVirtualTime(clock, w.run(running.signal));
      while ((await store.outbox.counts('out')).pending > 0) await new Promise((resolve) => setTimeout(resolve, 10));
      running.abort();
      await run;
      // The run leaves the signal as it found it: no listener, the default bound.
      expect(getEventListeners(running.signal, 'abort')).toHaveLength(0);
      expect(getMaxListeners(running.signal)).toBe(defaultMaxListeners);
      // Warnings are emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => w.startsWith('MaxListenersExceededWarning'))).toEqual([]);
      await store.close();
    } finally {
      process.off('warning', onWarning);
    }
  });

  it("a tenant's many workers share the engine's stop and write signals without a listener-leak warning", async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(`${w.name}: ${w.message}`);
    process.on('warning', onWarning);
    try {
      // As DeliveryEngine.start runs them: every worker on the one stop and the one abort signal.
      const names = Array.from({ length: 12 }, (_, i) => `out-${i}`);
      const clock = testClock();
      const store = await openStore(join(makeTempDir(), 's.sqlite'), names);
      const stopLaunching = new AbortController();
      const abortWrites = new AbortController();
      const runs = names.map((name) =>
        worker(store, new ScriptedSink(name, undefined, clock), clock).run(stopLaunching.signal, {
          abortWrites: abortWrites.signal,
        }),
      );
      await withVirtualTime(clock, new Promise((resolve) => setTimeout(resolve, 50)));
      expect(getEventListeners(stopLaunching.signal, 'abort')).toHaveLength(12);
      stopLaunching.abort();
      await withVirtualTime(clock, Promise.all(runs));
      for (const signal of [stopLaunching.signal, abortWrites.signal])
        expect(getMaxListeners(signal)).toBe(defaultMaxListeners);
      expect(getEventListeners(abortWrites.signal, 'abort')).toHaveLength(0);
      // Warnings are emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => w.startsWith('MaxListenersExceededWarning'))).toEqual([]);
      await store.close();
    } finally {
      process.off('warning', onWarning);
    }
  });

  it("holds back only the failing object's later events", async () => {
    const { store, sink, clock, drain } = await setup();
    const c1 = await ingestEntries(store, 'career', 'c-1', ['a', 'b']);
    const c2 = await ingestEntries(store, 'career', 'c-2', ['a', 'b']);
    sink.script = failWhen(c1[0]!, 2, () => new Error('HTTP 502'));
    expect(await drain(worker(store, sink, clock, { batchSize: 1 }))).toBe(true);
    // c-2 flows while c-1 waits: both of its events go before c-1's second event.
    expect(sink.accepted).toEqual([c2[0], c2[1], c1[0], c1[1]]);
    expect(sink.writes.filter((w) => w.includes(c1[1]!))).toHaveLength(1);
    expect(deliveryOf(store, c1[0]!)).toMatchObject({ state: 'delivered', attempts: 3 });
    await store.close();
  });

  it('records attempts, next attempt time and last error in the store', async () => {
    const { store, sink, clock, drain } = await setup(() => {
      throw new Error('destination answered 503');
    });
    const [id] = await ingestEntries(store, 'career', 'c-1', ['a']);
    // random 0.5: attempt 1 fails at +0 and waits 500 ms; attempt 2 fails at +500 and waits 1000 ms.
    expect(await drain(worker(store, sink, clock), 1_000)).toBe(false);
    expect(sink.writeTimes).toEqual([START, START + 500]);
    expect(deliveryOf(store, id!)).toMatchObject({
      state: 'pending',
      attempts: 2,
      next_attempt_at: START + 1_500,
      first_attempt_at: START,
      last_error: 'destination answered 503',
    });
    expect(sink.batches.map((b) => b[0]!.attempt)).toEqual([1, 2]);
    await store.close();
  });

  it('moves an event to the dead letters after maxAttempts, then delivers the rest of its object', async () => {
    const { store, sink, clock, drain } = await setup();
    const [a, b] = await ingestEntries(store, 'career', 'c-1', ['a', 'b']);
    sink.script = failWhen(a!, 99, () => new Error('HTTP 500'));
    expect(await drain(worker(store, sink, clock, { retry: { maxAttempts: 3 }, batchSize: 1 }))).toBe(true);
    expect(sink.writes.filter((w) => w.includes(a!))).toHaveLength(3);
    expect(await store.deadLetters.list()).toMatchObject([
      { sink: 'out', eventId: a, attempts: 3, lastError: 'gave up after 3 attempts: HTTP 500' },
    ]);
    expect(sink.accepted).toEqual([b]);
    await store.close();
  });

  it('dead-letters a rejected batch at once, without retrying', async () => {
    const { store, sink, clock, drain } = await setup(() => {
      throw new SinkRejectedError('schema mismatch');
    });
    const [a] = await ingestEntries(store, 'skill', 's-1', ['a']);
    expect(await drain(worker(store, sink, clock))).toBe(true);
    expect(sink.batches).toHaveLength(1);
    expect(await store.deadLetters.list()).toMatchObject([
      { eventId: a, attempts: 1, lastError: 'rejected: SINK_REJECTED: schema mismatch' },
    ]);
    await store.close();
  });

  it('reconnects after SinkUnavailableError and resends without counting an attempt', async () => {
    const { store, sink, clock, drain } = await setup();
    const [a] = await ingestEntries(store, 'career', 'c-1', ['a']);
    sink.script = failWhen(a!, 1, () => new SinkUnavailableError('connection reset'));
    expect(await drain(worker(store, sink, clock))).toBe(true);
    expect(sink.connects).toBe(2);
    expect(sink.batches.map((b) => b[0]!.attempt)).toEqual([1, 1]);
    expect(sink.writeTimes[1]! - sink.writeTimes[0]!).toBeGreaterThan(0);
    expect(deliveryOf(store, a!)).toMatchObject({ state: 'delivered', attempts: 1 });
    await store.close();
  });

  it('pauses for the time a SinkBackoffError asks, without reconnecting or counting an attempt', async () => {
    const { store, sink, clock, drain } = await setup();
    const [a] = await ingestEntries(store, 'career', 'c-1', ['a']);
    sink.script = failWhen(a!, 1, () => new SinkBackoffError('slow down', 30_000));
    expect(await drain(worker(store, sink, clock))).toBe(true);
    expect(sink.writeTimes).toEqual([START, START + 30_000]);
    expect(sink.connects).toBe(1);
    expect(deliveryOf(store, a!)).toMatchObject({ state: 'delivered', attempts: 1 });
    await store.close();
  });

  it('after a partial failure, re-sends the later events of the same object after the failed one', async () => {
    const { store, sink, clock, drain } = await setup();
    const c1 = await ingestEntries(store, 'career', 'c-1', ['a', 'b', 'c']);
    const c2 = await ingestEntries(store, 'career', 'c-2', ['a']);
    sink.script = failWhen(
      c1[1]!,
      1,
      () => new SinkPartialFailureError('1 of 4 failed', new Map([[c1[1]!, { error: 'HTTP 502', permanent: false }]])),
    );
    const w = worker(store, sink, clock);
    // Drain for less than the retry delay (500 ms): the first write fails in part, the retry is not due yet.
    expect(await drain(w, 400)).toBe(false);
    expect(sink.writes).toEqual([[...c1, ...c2]]);
    expect(deliveryOf(store, c1[0]!)).toMatchObject({ state: 'delivered', attempts: 1 });
    expect(deliveryOf(store, c2[0]!)).toMatchObject({ state: 'delivered', attempts: 1 });
    expect(deliveryOf(store, c1[1]!)).toMatchObject({
      state: 'pending',
      attempts: 1,
      next_attempt_at: START + 500,
      last_error: 'HTTP 502',
    });
    expect(deliveryOf(store, c1[2]!)).toMatchObject({ state: 'pending', attempts: 0, last_error: null });

    expect(await drain(w)).toBe(true);
    expect(sink.writes[1]).toEqual([c1[1], c1[2]]);
    // The destination got c1: a, c, then b, c again; its last copies are in order.
    expect(only(sink.accepted, c1)).toEqual([c1[0], c1[2], c1[1], c1[2]]);
    expect(lastCopies(only(sink.accepted, c1))).toEqual(c1);
    await store.close();
  });

  it('picks up events ingested while it runs, keeping them behind a retrying event of their object', async () => {
    const { store, sink, clock, drain } = await setup();
    const [a] = await ingestEntries(store, 'career', 'c-1', ['a']);
    let later: { b: string[]; other: string[] } | undefined;
    sink.script = async (batch, index) => {
      if (index > 0) return;
      // While the first write is out, the poller ingests more for the same object and another one.
      later = {
        b: await ingestEntries(store, 'career', 'c-1', ['b']),
        other: await ingestEntries(store, 'career', 'c-2', ['a']),
      };
      throw new Error('HTTP 503');
    };
    expect(await drain(worker(store, sink, clock))).toBe(true);
    expect(sink.accepted).toEqual([later!.other[0], a, later!.b[0]]);
    await store.close();
  });

  it('delivers dead letters requeued after the outbox had emptied', async () => {
    const { store, sink, clock, drain } = await setup();
    const [a] = await ingestEntries(store, 'career', 'c-1', ['a']);
    sink.script = failWhen(a!, 1, () => new SinkRejectedError('no'));
    const w = worker(store, sink, clock);
    expect(await drain(w)).toBe(true);
    expect((await store.outbox.counts('out')).dead).toBe(1);
    expect(await store.deadLetters.requeueSink('out', clock.now())).toBe(1);
    expect(await drain(w)).toBe(true);
    expect(sink.accepted).toEqual([a]);
    expect(await store.outbox.counts('out')).toMatchObject({ pending: 0, delivered: 1, dead: 0 });
    await store.close();
  });

  it('resumes pending deliveries after a restart with a new worker and a reopened store', async () => {
    const first = await setup(() => {
      throw new Error('down');
    });
    const c1 = await ingestEntries(first.store, 'career', 'c-1', ['a', 'b']);
    const idp = await ingestEntries(first.store, 'identity_provider', '', ['x']);
    expect(await first.drain(worker(first.store, first.sink, first.clock), 1_000)).toBe(false);
    await first.store.close();

    const store = openSqliteStoreFile(first.file);
    const sink = new ScriptedSink('out', undefined, first.clock);
    const resumedAt = first.clock.now();
    const w = worker(store, sink, first.clock);
    await withVirtualTime(first.clock, w.run(new AbortController().signal, { deadline: resumedAt + 60_000 }));
    expect((await store.outbox.counts('out')).pending).toBe(0);
    expect(only(sink.accepted, c1)).toEqual(c1);
    expect(only(sink.accepted, idp)).toEqual(idp);
    // The retry schedule survived the restart: nothing went before the stored next attempt time.
    expect(Math.min(...sink.writeTimes)).toBe(START + 1_500);
    expect(deliveryOf(store, c1[0]!)).toMatchObject({ state: 'delivered', attempts: 3 });
    await store.close();
  });
});
