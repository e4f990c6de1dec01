import { describe, expect, it, vi } from 'vitest';
import { LeaseLostError, type WriteFence } from '../../src/cluster/writeFence.js';
import { RATE_RIDE_AFTER_MS } from '../../src/store/postgres/deferredState.js';
import { DEFERRED_STATE_FLUSH_MS } from '../../src/store/storeRecords.js';
import { admin, openBackend, prepare } from './postgresTestDb.js';
import { connectedSinkA, rateOf } from './contract/storeFixtures.js';
import { entry, ingest, T } from './storeContract.suite.js';

describe.skipIf(!admin)('deferred state on the PostgreSQL store', () => {
  it('rides in the next ingest: one transaction for the poll, its learned rate and the named values', async () => {
    const backend = await openBackend();
    const store = await backend.tenantStore('t');
    await prepare(store);
    store.deferState({ rates: [rateOf(1)], meta: { 'budget.snapshot': 'a' } });
    store.deferState({ rates: [rateOf(2)], meta: { 'budget.snapshot': 'b', 'poll.hours': '[]' } });
    const before = { ...backend.activity };
    await ingest(store, [entry('e-1')]);
    // On a connection that prepared none of its statements yet, each alone: BEGIN, the head lock,
    // the facts, the seen ids, the event with its deliveries, the cursor, the rates, the named
    // values, COMMIT. What a poll costs, counted at the source.
    expect(backend.activity.transactions - before.transactions).toBe(1);
    expect(backend.activity.statements - before.statements).toBe(9);
    expect((await store.rates.list()).map((r) => r.events)).toEqual([2]);
    expect(await store.getMeta('budget.snapshot')).toBe('b');
    expect(await store.getMeta('poll.hours')).toBe('[]');

    // Nothing waits any more, and the statements are prepared: BEGIN, the head lock with the facts,
    // then the seen ids, the event, the cursor and COMMIT in one round trip (Query.later).
    const again = { ...backend.activity };
    await ingest(store, [entry('e-2')]);
    expect(backend.activity.transactions - again.transactions).toBe(1);
    expect(backend.activity.statements - again.statements).toBe(3);
  });

  it('waits for the next write when the transaction that carried it is refused, and is written then', async () => {
    const backend = await openBackend();
    let refusing = false;
    const fence: WriteFence = {
      statementTimeoutMs: 10_000,
      check: async (client, begin) => {
        await client.query(begin);
        if (refusing) throw new LeaseLostError('t', 'the test took it');
      },
    };
    const store = await backend.tenantStore('t', { fence });
    await prepare(store);
    store.deferState({ rates: [rateOf(3)] });
    refusing = true;
    await expect(ingest(store, [entry('e-1')])).rejects.toMatchObject({ code: 'LEASE_LOST' });
    await expect(store.flushDeferred()).rejects.toMatchObject({ code: 'LEASE_LOST' });
    expect(await store.rates.list()).toEqual([]);

    refusing = false;
    await store.flushDeferred();
    expect((await store.rates.list()).map((r) => r.events)).toEqual([3]);
  });

  it('is written on its own only once it waited its own half minute, not on the timer of state a poll carried', async () => {
    const backend = await openBackend();
    const store = await backend.tenantStore('t');
    await prepare(store);
    // Only the store's timers: the database's answers still come in real time.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      // A meta value makes the state due at once.
      store.deferState({ rates: [rateOf(1)], meta: { 'budget.snapshot': 'a' } });
      await vi.advanceTimersByTimeAsync(1_000);
      await ingest(store, [entry('e-1')]); // carries rate 1
      await vi.advanceTimersByTimeAsync(1_000);
      store.deferState({ rates: [rateOf(2)] }); // the next poll's, 2 s after the first
      const before = backend.activity.transactions;
      await vi.advanceTimersByTimeAsync(DEFERRED_STATE_FLUSH_MS - 1_000);
      expect(backend.activity.transactions - before).toBe(0);
      await vi.advanceTimersByTimeAsync(1_000);
      // Read beside the store, so the wait counts nothing of its own.
      const written = async () =>
        (await admin!.query<{ events: number }>(`SELECT events FROM "${backend.schema}".rate_estimates`)).rows[0]
          ?.events === 2;
      while (!(await written())) await new Promise((resolve) => setImmediate(resolve));
      expect(backend.activity.transactions - before).toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });

  it("holds a poll's learned rate for RATE_RIDE_AFTER_MS, then writes the latest with the next poll", async () => {
    const backend = await openBackend();
    const store = await backend.tenantStore('t');
    await prepare(store);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      await ingest(store, []);
      const bare = { ...backend.activity };
      await ingest(store, []);
      const pollStatements = backend.activity.statements - bare.statements;

      store.deferState({ rates: [rateOf(1)] });
      const held = { ...backend.activity };
      await ingest(store, []);
      // The poll right after costs what a poll costs: the rate waits.
      expect(backend.activity.statements - held.statements).toBe(pollStatements);
      expect(await store.rates.list()).toEqual([]);

      await vi.advanceTimersByTimeAsync(RATE_RIDE_AFTER_MS / 2);
      store.deferState({ rates: [rateOf(2)] }); // the same log's, learned by a later poll
      await vi.advanceTimersByTimeAsync(RATE_RIDE_AFTER_MS / 2);
      const due = { ...backend.activity };
      await ingest(store, []);
      // The poll, one statement alone, takes a transaction to carry both polls' rates in one
      // upsert (BEGIN, the cursor, the upsert, COMMIT): the latest is kept.
      expect(pollStatements).toBe(1);
      expect(backend.activity.transactions - due.transactions).toBe(1);
      expect(backend.activity.statements - due.statements).toBe(4);
      expect((await store.rates.list()).map((r) => r.events)).toEqual([2]);

      // Taken: nothing is written alone later, and the next rate waits its own time.
      const after = { ...backend.activity };
      await vi.advanceTimersByTimeAsync(DEFERRED_STATE_FLUSH_MS);
      expect(backend.activity.transactions - after.transactions).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('writes held rates when flushed (a stopping tenant), before they are due', async () => {
    const backend = await openBackend();
    const store = await backend.tenantStore('t');
    await prepare(store);
    store.deferState({ rates: [rateOf(7)] });
    await store.flushDeferred();
    expect((await store.rates.list()).map((r) => r.events)).toEqual([7]);
  });

  it('records the last delivery in the ack of a batch, in the same one statement', async () => {
    const backend = await openBackend();
    const store = await backend.tenantStore('t');
    await prepare(store);
    await store.sinks.recordState(connectedSinkA(null));
    await ingest(store, [entry('e-1')]);
    const [pending] = await store.outbox.pending('a', 0, 10);
    const before = { ...backend.activity };
    await store.outbox.markDelivered('a', [pending!.seq], T + 5);
    expect(backend.activity.transactions - before.transactions).toBe(1);
    expect(backend.activity.statements - before.statements).toBe(1);
    expect((await store.sinks.list()).find((s) => s.name === 'a')).toMatchObject({ lastDeliveryAt: T + 5 });
    expect(await store.outbox.counts('a')).toMatchObject({ pending: 0 });
  });
});
