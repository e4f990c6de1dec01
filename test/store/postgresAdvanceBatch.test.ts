import { describe, expect, it } from 'vitest';
import { LeaseTable } from '../../src/cluster/leaseTable.js';
import { databaseFence, leaseNow } from '../../src/cluster/writeFence.js';
import { nextAdvanceBatch, splitsBatch, type BatchedAdvance } from '../../src/store/postgres/advanceBatch.js';
import type { ChangefeedStore } from '../../src/store/changefeedStore.js';
import { acquireOne } from '../support/acquireOne.js';
import { entry, HOUR, ingest, rateOf, T } from './contract/storeFixtures.js';
import { admin, openBackend, prepare, waiterBehind } from './postgresTestDb.js';

const LEASE_MS = 30_000;

const advance = (tenant: string, objectId: string, riding = false): { advance: BatchedAdvance } => ({
  advance: {
    claim: { tenant, holder: 'a', epoch: 1 },
    statementTimeoutMs: 5_000,
    log: 'career',
    objectId,
    windowEnd: T,
    now: T,
    ...(riding ? { riding: { rates: [], meta: [] } } : {}),
  },
});

describe('which advances the next batch statement takes', () => {
  const a1 = advance('a', 'c-1');
  const a2 = advance('a', 'c-2');
  const a1Again = advance('a', 'c-1');
  const b1 = advance('b', 'c-1');
  const aRiding1 = advance('a', 'c-3', true);
  const aRiding2 = advance('a', 'c-4', true);
  it.each([
    { name: 'all, in order, under the limit', pending: [a1, a2, b1], max: 10, take: [a1, a2, b1], rest: [] },
    { name: 'at most the limit, the rest after', pending: [a1, a2, b1], max: 2, take: [a1, a2], rest: [b1] },
    {
      name: 'one log once: its later advance in the next',
      pending: [a1, b1, a1Again],
      max: 10,
      take: [a1, b1],
      rest: [a1Again],
    },
    {
      name: "one tenant's riding state once",
      pending: [aRiding1, a1, aRiding2],
      max: 10,
      take: [aRiding1, a1],
      rest: [aRiding2],
    },
    { name: 'nothing waiting', pending: [], max: 10, take: [], rest: [] },
  ])('$name', ({ pending, max, take, rest }) => {
    expect(nextAdvanceBatch(pending, max)).toEqual({ take, rest });
  });
});

describe("which failures of a batch's statement have its advances written alone", () => {
  const pgError = (code: string, severity = 'ERROR') => Object.assign(new Error(code), { code, severity });
  it.each([
    { name: 'a row locked past lock_timeout', error: pgError('55P03'), alone: true },
    { name: 'a deadlock', error: pgError('40P01'), alone: true },
    { name: 'a serialization failure', error: pgError('40001'), alone: true },
    { name: 'a check or unique constraint', error: pgError('23514'), alone: true },
    { name: 'a bad value', error: pgError('22P02'), alone: true },
    { name: 'the statement timeout (a database too slow)', error: pgError('57014'), alone: false },
    { name: 'the server shutting down', error: pgError('57P01', 'FATAL'), alone: false },
    { name: 'too many connections', error: pgError('53300', 'FATAL'), alone: false },
    { name: 'a disk full', error: pgError('53100'), alone: false },
    { name: 'a read-only standby', error: pgError('25006'), alone: false },
    { name: 'the connection lost', error: new Error('Connection terminated unexpectedly'), alone: false },
    { name: 'a refused connect', error: Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }), alone: false },
    { name: 'a missing table (every statement alone would fail too)', error: pgError('42P01'), alone: false },
  ])('$name: $alone', ({ error, alone }) => {
    expect(splitsBatch(error)).toBe(alone);
  });
});

describe.skipIf(!admin)('the read-nothing polls of many tenants, in one statement (PostgreSQL)', () => {
  const tenants = ['t-1', "o'hara", 't-3'];
  /** A poll that found nothing, as the window walker commits it. */
  const poll = (store: ChangefeedStore, windowEnd: number) =>
    ingest(store, [], { windowEnd, now: windowEnd, pruneSeenBefore: windowEnd - 2 * HOUR });

  async function fencedStores(fenceLeaseMs = LEASE_MS) {
    const backend = await openBackend();
    const leases = new LeaseTable(backend.leasePool, { leaseMs: LEASE_MS });
    const stores: ChangefeedStore[] = [];
    for (const tenant of tenants) {
      expect(await acquireOne(leases, tenant, 'a')).toMatchObject({ epoch: 1 });
      const store = await backend.tenantStore(tenant, {
        fence: databaseFence({ tenant, holder: 'a', epoch: 1 }, fenceLeaseMs),
      });
      await prepare(store);
      stores.push(store);
    }
    // Each connection prepares the batch's statement once: polled until every one of the pool's
    // four has, so what follows is one round trip whichever connection it takes.
    for (let i = 0; i < 8; i++) await Promise.all(stores.map((store) => poll(store, T + 100 + i)));
    return { backend, stores };
  }

  it("writes every tenant's cursor with one statement for all when they poll in one turn", async () => {
    const { backend, stores } = await fencedStores();
    const before = backend.activity.statements;
    await Promise.all(stores.map((store) => poll(store, T + 1_000)));
    expect(backend.activity.statements - before).toBe(1);
    for (const store of stores)
      expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({
        windowEnd: T + 1_000,
        lastPollAt: T + 1_000,
      });
  });

  it("refuses the advance of a tenant another replica took over, writing nothing of it, and writes the others'", async () => {
    const { backend, stores } = await fencedStores();
    const [first, taken, third] = stores as [ChangefeedStore, ChangefeedStore, ChangefeedStore];
    await backend.pool.query("UPDATE changefeed_leases SET holder = 'b', epoch = 2 WHERE tenant = $1", [tenants[1]]);
    taken.deferState({ rates: [rateOf(7)], meta: { budget: 'lost' } });
    first.deferState({ rates: [rateOf(3)], meta: { budget: 'kept' } });
    const polls = await Promise.allSettled(stores.map((store) => poll(store, T + 2_000)));
    expect(polls.map((p) => p.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((polls[1] as PromiseRejectedResult).reason).toMatchObject({ code: 'LEASE_LOST' });
    expect(await taken.watchedLogs.get('career', 'c-1')).toMatchObject({ windowEnd: T + 107 });
    expect(await taken.rates.list()).toEqual([]);
    expect(await taken.getMeta('budget')).toBeUndefined();
    expect(await first.watchedLogs.get('career', 'c-1')).toMatchObject({ windowEnd: T + 2_000 });
    expect((await first.rates.list()).map((r) => r.events)).toEqual([3]);
    expect(await first.getMeta('budget')).toBe('kept');
    expect(await third.watchedLogs.get('career', 'c-1')).toMatchObject({ windowEnd: T + 2_000 });
  });

  it('refuses the advance of a lease run out on the database clock', async () => {
    const { backend, stores } = await fencedStores();
    await backend.pool.query(
      "UPDATE changefeed_leases SET expires_at = now() - interval '1 second' WHERE tenant = $1",
      [tenants[2]],
    );
    const polls = await Promise.allSettled(stores.map((store) => poll(store, T + 3_000)));
    expect(polls.map((p) => p.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
    expect(await stores[2]!.watchedLogs.get('career', 'c-1')).toMatchObject({ windowEnd: T + 107 });
  });

  /** Another replica's transaction holding `tenant`'s lease row FOR UPDATE, as a takeover or a release does. */
  async function lockLeaseRow(backend: Awaited<ReturnType<typeof openBackend>>, tenant: string) {
    const taker = await backend.leasePool.connect();
    await taker.query('BEGIN');
    await taker.query('SELECT 1 FROM changefeed_leases WHERE tenant = $1 FOR UPDATE', [tenant]);
    return taker;
  }

  it.each([
    { ending: 'COMMIT', status: 'rejected', windowEnd: T + 107, budget: undefined },
    { ending: 'ROLLBACK', status: 'fulfilled', windowEnd: T + 4_000, budget: 'rode alone' },
  ])(
    "writes the others at once while a takeover holds one tenant's lease row; that one waits alone ($ending)",
    async ({ ending, status, windowEnd, budget }) => {
      const { backend, stores } = await fencedStores();
      const [first, second, locked] = stores as [ChangefeedStore, ChangefeedStore, ChangefeedStore];
      locked.deferState({ meta: { budget: 'rode alone' } });
      const taker = await lockLeaseRow(backend, tenants[2]!);
      let lockedPoll: Promise<unknown>;
      try {
        lockedPoll = poll(locked, T + 4_000).then(
          () => 'fulfilled',
          (error: unknown) => ((error as { code?: string }).code === 'LEASE_LOST' ? 'rejected' : error),
        );
        // Answered while the row is still locked: a batch that waited for it would not be.
        await Promise.all([poll(first, T + 4_000), poll(second, T + 4_000)]);
        await taker.query("UPDATE changefeed_leases SET holder = 'b', epoch = 2 WHERE tenant = $1", [tenants[2]]);
      } finally {
        await taker.query(ending);
        taker.release();
      }
      expect(await lockedPoll).toBe(status);
      expect(await locked.watchedLogs.get('career', 'c-1')).toMatchObject({ windowEnd });
      expect(await locked.getMeta('budget')).toBe(budget);
      for (const store of [first, second])
        expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({ windowEnd: T + 4_000 });
    },
  );

  it('does not wait for a lease row under renewal (FOR NO KEY UPDATE)', async () => {
    const { backend, stores } = await fencedStores();
    const renewer = await backend.leasePool.connect();
    try {
      await renewer.query('BEGIN');
      await renewer.query("UPDATE changefeed_leases SET expires_at = now() + interval '30 seconds' WHERE tenant = $1", [
        tenants[0],
      ]);
      const before = backend.activity.statements;
      await Promise.all(stores.map((store) => poll(store, T + 4_000)));
      expect(backend.activity.statements - before).toBe(1);
    } finally {
      await renewer.query('COMMIT');
      renewer.release();
    }
  });

  it("tells only the tenant whose valid lease row stays locked past the fence's bound to wait (STORE_BUSY), holding its riding state", async () => {
    const { backend, stores } = await fencedStores();
    const locked = stores[2]!;
    locked.deferState({ meta: { budget: 'held' } });
    // Held as this replica's own release or an acquisition that found the lease held holds it: the
    // tenant's advance alone waits behind it, the others do not wait. The wait is ended as its
    // bound ends it (57014, query_canceled: a cancel once the wait is seen, so no deadline races a
    // loaded machine; left alone, the bound would say the same five seconds later). The lease is
    // still valid: not LEASE_LOST (the runtime would drop a tenant it holds), and not the
    // database's problem (STORE_UNAVAILABLE pauses the tenant and fails its readiness).
    const taker = await lockLeaseRow(backend, tenants[2]!);
    const endWaitBehindTaker = async () => {
      await backend.leasePool.query('SELECT pg_cancel_backend($1)', [await waiterBehind(taker)]);
    };
    try {
      const [polls] = await Promise.all([
        Promise.allSettled(stores.map((store) => poll(store, T + 4_000))),
        endWaitBehindTaker(),
      ]);
      expect(polls.map((p) => p.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
      expect((polls[2] as PromiseRejectedResult).reason).toMatchObject({ code: 'STORE_BUSY' });
      expect(locked.health.problem).toBeUndefined();
      // A write in a transaction (new entries) says the same when its fence check waits as long.
      const [ingested] = await Promise.allSettled([
        ingest(locked, [entry('e-1')], { windowEnd: T + 4_000, now: T + 4_000 }),
        endWaitBehindTaker(),
      ]);
      expect(ingested).toMatchObject({ status: 'rejected', reason: { code: 'STORE_BUSY' } });
      expect(locked.health.problem).toBeUndefined();
      // Counted apart from the pool's waits (changefeed_store_lease_row_busy_total).
      expect(backend.activity).toMatchObject({ leaseRowBusy: 2, poolBusy: 0 });
    } finally {
      await taker.query('ROLLBACK');
      taker.release();
    }
    expect(await locked.getMeta('budget')).toBeUndefined();
    await Promise.all(stores.map((store) => poll(store, T + 5_000)));
    expect(await locked.getMeta('budget')).toBe('held');
    for (const store of stores)
      expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({ windowEnd: T + 5_000 });
  });

  it("writes the others alone when one tenant's row the batch writes stays locked by another transaction", async () => {
    const { backend, stores } = await fencedStores(3_000);
    const locked = stores[1]!;
    locked.deferState({ meta: { budget: 'held' } });
    // Another session's transaction on one tenant's cursor row, past the fence's bound (half a second).
    const holder = await backend.leasePool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM watched_logs WHERE tenant = $1 FOR UPDATE', [tenants[1]]);
      const polls = await Promise.allSettled(stores.map((store) => poll(store, T + 6_500)));
      expect(polls.map((p) => p.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((polls[1] as PromiseRejectedResult).reason).toMatchObject({ code: 'STORE_UNAVAILABLE' });
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    for (const i of [0, 2])
      expect(await stores[i]!.watchedLogs.get('career', 'c-1')).toMatchObject({ windowEnd: T + 6_500 });
    expect(await locked.watchedLogs.get('career', 'c-1')).toMatchObject({ windowEnd: T + 107 });
    expect(await locked.getMeta('budget')).toBeUndefined();
    // Nothing is left behind: the next batch writes all three, the riding state with it.
    await Promise.all(stores.map((store) => poll(store, T + 7_500)));
    expect(await locked.getMeta('budget')).toBe('held');
    for (const store of stores)
      expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({ windowEnd: T + 7_500 });
  });

  // A table lock holds up every row of the batch, and every advance written alone after it; a
  // session holding every cursor row (a data fix in an open transaction) holds up each advance
  // written alone. Either way a split would cost each tenant a statement waiting out its bound on
  // a pool connection (500 tenants: minutes of the pool), so the polls fail at once: each batch
  // and its looks at the tables' and the rows' locks (both NOWAIT), however the polls of a loaded
  // machine fall into batches (10 statements for three tenants when each was written alone).
  it.each([
    {
      held: 'a table it writes',
      lock: 'LOCK TABLE watched_logs IN SHARE MODE',
      says: 'locked by another session',
      statements: 2,
    },
    { held: 'its cursor rows', lock: 'SELECT 1 FROM watched_logs FOR UPDATE', says: 'cursor row', statements: 3 },
  ])(
    'fails the polls at once when another session holds $held locked, none waiting out its bound alone',
    async ({ lock, says, statements }) => {
      const { backend, stores } = await fencedStores(3_000);
      const holder = await backend.leasePool.connect();
      try {
        await holder.query('BEGIN');
        await holder.query(lock);
        const before = backend.activity.statements;
        const polls = await Promise.allSettled(stores.map((store) => poll(store, T + 6_500)));
        expect(polls.map((p) => p.status)).toEqual(['rejected', 'rejected', 'rejected']);
        for (const p of polls)
          expect((p as PromiseRejectedResult).reason).toMatchObject({
            code: 'STORE_UNAVAILABLE',
            message: expect.stringContaining(says) as unknown,
          });
        expect(backend.activity.statements - before).toBeLessThanOrEqual(statements * stores.length);
      } finally {
        await holder.query('ROLLBACK');
        holder.release();
      }
      await Promise.all(stores.map((store) => poll(store, T + 7_500)));
      for (const store of stores)
        expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({ windowEnd: T + 7_500 });
    },
  );

  it.each([
    { name: 'valid and free', locked: false, expired: false, takenOver: false, now: 'held' },
    {
      name: 'valid, locked by a release or an acquisition that found it held',
      locked: true,
      expired: false,
      takenOver: false,
      now: 'changing',
    },
    {
      name: 'run out on the database clock, locked by a takeover',
      locked: true,
      expired: true,
      takenOver: false,
      now: 'lost',
    },
    { name: 'taken over', locked: false, expired: false, takenOver: true, now: 'lost' },
  ])("reads a lease row's state without waiting for its lock: $name", async ({ locked, expired, takenOver, now }) => {
    const { backend } = await fencedStores();
    const tenant = tenants[0]!;
    if (expired)
      await backend.pool.query(
        "UPDATE changefeed_leases SET expires_at = now() - interval '1 second' WHERE tenant = $1",
        [tenant],
      );
    if (takenOver)
      await backend.pool.query("UPDATE changefeed_leases SET holder = 'b', epoch = 2 WHERE tenant = $1", [tenant]);
    const taker = locked ? await lockLeaseRow(backend, tenant) : undefined;
    const client = await backend.pool.connect();
    try {
      expect(await leaseNow(client, { tenant, holder: 'a', epoch: 1 }, 5_000)).toBe(now);
    } finally {
      client.release();
      await taker?.query('ROLLBACK');
      taker?.release();
    }
  });

  it("writes hostile object ids of one batch as registered, and a NUL in one does not fail the others'", async () => {
    const { backend, stores } = await fencedStores();
    const ids = ['q\'\\"{x,y}', 'nul\u0000id', '𝄞 \u2028 \uFEFF é', 'x'.repeat(10_000) + "'\\"];
    await Promise.all(
      stores.map((store) =>
        store.watchedLogs.registerAll(
          ids.map((objectId) => ({ log: 'career', objectId, origin: 'config', coverageStart: T, now: T })),
        ),
      ),
    );
    const before = backend.activity.transactions;
    const polls = await Promise.allSettled(
      stores.flatMap((store) =>
        ids.map((objectId) => ingest(store, [], { objectId, windowEnd: T + 6_000, now: T + 6_000 })),
      ),
    );
    expect(polls.map((p) => p.status)).toEqual(polls.map(() => 'fulfilled'));
    expect(backend.activity.transactions - before).toBe(1);
    for (const store of stores) {
      const logs = await store.watchedLogs.list();
      for (const objectId of ids)
        expect(logs.find((l) => l.objectId === objectId.replace('\u0000', '\uFFFD'))).toMatchObject({
          windowEnd: T + 6_000,
        });
    }
  });

  it('answers every poll of a batch whose connection the server ends mid-statement, then writes again', async () => {
    const { backend, stores } = await fencedStores();
    // A row the statement must update, held by another session: the batch waits there, killable.
    const holder = await backend.leasePool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM watched_logs WHERE tenant = $1 FOR UPDATE', [tenants[1]]);
      const before = backend.activity.statements;
      const polls = Promise.allSettled(stores.map((store) => poll(store, T + 7_000)));
      await backend.leasePool.query('SELECT pg_terminate_backend($1)', [await waiterBehind(holder)]);
      const settled = await polls;
      expect(settled.map((p) => p.status)).toEqual(['rejected', 'rejected', 'rejected']);
      for (const p of settled) expect((p as PromiseRejectedResult).reason).toMatchObject({ code: 'STORE_UNAVAILABLE' });
      // Failed as one: no advance of a batch the store refused is written alone.
      expect(backend.activity.statements - before).toBe(1);
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    await Promise.all(stores.map((store) => poll(store, T + 8_000)));
    for (const store of stores)
      expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({ windowEnd: T + 8_000 });
  });

  it("writes after a pooler's DISCARD ALL made the server forget the batch's prepared statement", async () => {
    const { backend, stores } = await fencedStores();
    const clients = await Promise.all([1, 2, 3, 4].map(() => backend.pool.connect()));
    for (const client of clients) {
      await client.query('DISCARD ALL');
      client.release();
    }
    await Promise.all(stores.map((store) => poll(store, T + 9_000)));
    await Promise.all(stores.map((store) => poll(store, T + 9_500)));
    for (const store of stores)
      expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({ windowEnd: T + 9_500 });
  });
});
