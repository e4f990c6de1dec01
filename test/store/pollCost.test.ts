import { afterEach, describe, expect, it, vi } from 'vitest';
import { LeaseTable } from '../../src/cluster/leaseTable.js';
import { acquireOne } from '../support/acquireOne.js';
import { databaseFence } from '../../src/cluster/writeFence.js';
import type { ChangefeedStore } from '../../src/store/changefeedStore.js';
import type { Db } from '../../src/store/sqlite/database.js';
import { SqliteStoreBackend } from '../../src/store/sqlite/sqliteStoreBackend.js';
import type { StoreActivity } from '../../src/store/storeActivity.js';
import { storeConfigSchema } from '../../src/store/storeConfig.js';
import { RATE_RIDE_AFTER_MS } from '../../src/store/postgres/deferredState.js';
import { DEFERRED_STATE_FLUSH_MS, type WatchRegistration } from '../../src/store/storeRecords.js';
import { makeTempDir } from '../support/tempDir.js';
import { admin, openBackend, prepare } from './postgresTestDb.js';
import { entry, entryIdsInJournal, HOUR, ingest, rateOf, T } from './contract/storeFixtures.js';

const LEASE_MS = 30_000;

/**
 * Statements SQLite ran for `work`, each execution counted (the store's activity counts a
 * statement once per step, however many times the step runs it), and those outside a
 * transaction, each its own.
 */
async function executions(db: Db, work: () => Promise<unknown>) {
  const proto = Object.getPrototypeOf(db.prepare('SELECT 1')) as Record<
    'get' | 'all' | 'run',
    (...args: unknown[]) => unknown
  >;
  const counted = { statements: 0, outsideTransactions: 0 };
  const spies = (['get', 'all', 'run'] as const).map((method) => {
    const original = proto[method];
    return vi.spyOn(proto, method).mockImplementation(function (this: { database: Db }, ...args: unknown[]) {
      counted.statements++;
      if (!this.database.inTransaction) counted.outsideTransactions++;
      return original.apply(this, args);
    });
  });
  try {
    await work();
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
  return counted;
}

/** What `work` cost the store, counted where the store sends it. */
async function cost(activity: StoreActivity, work: () => Promise<unknown>) {
  const before = { transactions: activity.transactions, statements: activity.statements };
  await work();
  return {
    transactions: activity.transactions - before.transactions,
    statements: activity.statements - before.statements,
  };
}

/** A poll's ingest as the window walker commits it: the cursor moves, old seen ids are forgotten. */
const poll = (store: ChangefeedStore, entries: ReturnType<typeof entry>[], windowEnd: number) =>
  ingest(store, entries, { windowEnd, now: windowEnd, pruneSeenBefore: windowEnd - 2 * HOUR });

const discovered = (objectId: string): WatchRegistration => ({
  log: 'career',
  objectId,
  origin: 'discovered',
  coverageStart: T,
  now: T,
});

describe.skipIf(!admin)('what a poll costs the PostgreSQL store, under a real lease', () => {
  // A quote in the tenant's name: the fence's check is sent with its values written into the SQL.
  const tenant = "o'hara";

  async function fencedStore() {
    const backend = await openBackend();
    const leases = new LeaseTable(backend.leasePool, { leaseMs: LEASE_MS });
    expect(await acquireOne(leases, tenant, 'a')).toMatchObject({ epoch: 1 });
    const store = await backend.tenantStore(tenant, {
      fence: databaseFence({ tenant, holder: 'a', epoch: 1 }, LEASE_MS),
    });
    await prepare(store);
    return { backend, store };
  }

  it('is one statement when the poll found nothing, the learned rates in it once due', async () => {
    const { backend, store } = await fencedStore();
    // On a connection that has not prepared the shared batch's statement yet: a transaction that
    // does (BEGIN with its bounds, the statement checking the lease, COMMIT).
    expect(await cost(backend.activity, () => poll(store, [], T + 1_000))).toEqual({ transactions: 1, statements: 3 });
    // Then one round trip: the cursor with the prune of old seen ids, checking the lease itself.
    expect(await cost(backend.activity, () => poll(store, [], T + 1_500))).toEqual({ transactions: 1, statements: 1 });
    // Only the store's timers: the database's answers and the lease's clock are real.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      store.deferState({ rates: [rateOf(4)] });
      // The previous poll's learned rate waits (RATE_RIDE_AFTER_MS): the next poll costs the same.
      expect(await cost(backend.activity, () => poll(store, [], T + 2_000))).toEqual({
        transactions: 1,
        statements: 1,
      });
      await vi.advanceTimersByTimeAsync(RATE_RIDE_AFTER_MS);
      // Due, it rides along in the same statement (AdvanceBatch: the cursor, the rates, the meta).
      expect(await cost(backend.activity, () => poll(store, [], T + 3_000))).toEqual({
        transactions: 1,
        statements: 1,
      });
      expect((await store.rates.list()).map((r) => r.events)).toEqual([4]);
      store.deferState({ rates: [rateOf(5)] });
      await vi.advanceTimersByTimeAsync(RATE_RIDE_AFTER_MS);
      expect(await cost(backend.activity, () => poll(store, [], T + 4_000))).toEqual({
        transactions: 1,
        statements: 1,
      });
    } finally {
      vi.useRealTimers();
    }
    expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({ windowEnd: T + 4_000, lastPollAt: T + 4_000 });
    expect((await store.rates.list()).map((r) => r.events)).toEqual([5]);
  });

  it('is one transaction of seven round trips for a poll with one new entry', async () => {
    const { backend, store } = await fencedStore();
    // BEGIN and the fence, the head lock, the facts, the seen id, the event with its deliveries,
    // the cursor with the prune, COMMIT.
    expect(await cost(backend.activity, () => poll(store, [entry('e-1')], T + 1_000))).toEqual({
      transactions: 1,
      statements: 7,
    });
    expect(await store.outbox.counts('a')).toMatchObject({ pending: 1 });
    // Its statements prepared: BEGIN and the fence, the head lock with the facts, then the seen
    // id, the event, the cursor and COMMIT in one round trip (Query.later).
    expect(await cost(backend.activity, () => poll(store, [entry('e-2')], T + 2_000))).toEqual({
      transactions: 1,
      statements: 3,
    });
    expect(await store.outbox.counts('a')).toMatchObject({ pending: 2 });
  });

  it('records the sort order a first poll detected with its cursor, in the same statement', async () => {
    const { backend, store } = await fencedStore();
    const first = () => ingest(store, [], { windowEnd: T + 1_000, sortOrder: 'newest-first' });
    expect(await cost(backend.activity, first)).toEqual({ transactions: 1, statements: 3 });
    expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({ sortOrder: 'newest-first' });
    // A read that detected nothing keeps the order recorded.
    await poll(store, [], T + 2_000);
    expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({ sortOrder: 'newest-first' });
  });

  it("registers a discovery's whole list in one transaction of three round trips", async () => {
    const { backend, store } = await fencedStore();
    const list = Array.from({ length: 25 }, (_, i) => discovered(`c-${i + 1}`));
    let added = 0;
    expect(await cost(backend.activity, async () => (added = await store.watchedLogs.registerAll(list)))).toEqual({
      transactions: 1,
      statements: 3,
    });
    expect(added).toBe(24); // c-1 was watched already
  });

  it("answers many tenants' sinks, outbox counts and watched logs asked in one turn with one statement each", async () => {
    const backend = await openBackend();
    const stores = await Promise.all(Array.from({ length: 20 }, (_, i) => backend.tenantStore(`t-${i}`)));
    for (const [i, store] of stores.entries()) {
      await prepare(store);
      // Tenant i watches i more logs and has i events pending: each must get its own rows back.
      await store.watchedLogs.registerAll(Array.from({ length: i }, (_, k) => discovered(`c-x${k}`)));
      if (i > 0)
        await ingest(
          store,
          Array.from({ length: i }, (_, k) => entry(`e-${k}`)),
        );
    }
    // What a /metrics scrape asks of every tenant at once.
    const scrape = () =>
      Promise.all(stores.map((s) => Promise.all([s.sinks.list(), s.outbox.counts('a'), s.watchedLogs.list()])));
    let answers: Awaited<ReturnType<typeof scrape>> = [];
    expect(await cost(backend.activity, async () => (answers = await scrape()))).toEqual({
      transactions: 3,
      statements: 3,
    });
    for (const [i, [sinks, counts, logs]] of answers.entries()) {
      expect(sinks.map((s) => s.name)).toEqual(['a']);
      expect(counts).toMatchObject({ pending: i, delivered: 0 });
      expect(logs).toHaveLength(1 + i);
      expect(logs).toEqual(await stores[i]!.watchedLogs.list());
    }
    // A tenant asking alone is answered alone, from a read sent after it asked.
    await ingest(stores[0]!, [entry('late')]);
    expect(await stores[0]!.outbox.counts('a')).toMatchObject({ pending: 1 });
  });

  it("answers many tenants' questions of seen ids in one statement, and one asked during it in the next", async () => {
    const backend = await openBackend();
    const stores = await Promise.all(Array.from({ length: 10 }, (_, i) => backend.tenantStore(`t-${i}`)));
    for (const [i, store] of stores.entries()) {
      await prepare(store);
      // Tenant i has seen e-0 .. e-(i-1) of career c-1.
      if (i > 0)
        await ingest(
          store,
          Array.from({ length: i }, (_, k) => entry(`e-${k}`)),
        );
    }
    const ids = ['e-0', 'e-3', 'e-7', 'nope'];
    let answers: Set<string>[] = [];
    expect(
      await cost(backend.activity, async () => {
        answers = await Promise.all(stores.map((s) => s.seen.seenAmong('career', 'c-1', ids)));
      }),
    ).toEqual({ transactions: 1, statements: 1 });
    for (const [i, seen] of answers.entries())
      expect([...seen].sort()).toEqual(ids.filter((id) => id !== 'nope' && Number(id.slice(2)) < i));
    // Asked while a statement is under way: the next one, after it, answers.
    const first = stores[9]!.seen.seenAmong('career', 'c-1', ['e-8']);
    await new Promise((resolve) => setImmediate(resolve));
    const second = stores[8]!.seen.seenAmong('career', 'c-2', ['e-0']);
    expect(
      await cost(backend.activity, async () => {
        expect([...(await first)]).toEqual(['e-8']);
        expect([...(await second)]).toEqual([]);
      }),
    ).toEqual({ transactions: 1, statements: 1 });
  });

  describe('a poll that found nothing, one statement checking the lease itself', () => {
    /** A store whose cursor statement is prepared on its connection, with an entry seen long ago. */
    async function preparedStore(locallyValid?: () => boolean) {
      const backend = await openBackend();
      const leases = new LeaseTable(backend.leasePool, { leaseMs: LEASE_MS });
      expect(await acquireOne(leases, tenant, 'a')).toMatchObject({ epoch: 1 });
      const store = await backend.tenantStore(tenant, {
        fence: databaseFence({ tenant, holder: 'a', epoch: 1 }, LEASE_MS, locallyValid),
      });
      await prepare(store);
      await poll(store, [entry('e-old', T)], T + 1_000);
      await poll(store, [], T + 1_500);
      // One round trip: the statement is prepared on the pool's connection.
      expect(await cost(backend.activity, () => poll(store, [], T + 1_600))).toEqual({
        transactions: 1,
        statements: 1,
      });
      return { backend, store };
    }

    /** Refused with LEASE_LOST, the cursor unmoved and the old seen id not pruned. */
    async function refusedLeavingAll(store: ChangefeedStore) {
      await expect(poll(store, [], T + 10 * HOUR)).rejects.toMatchObject({ code: 'LEASE_LOST' });
      expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({ windowEnd: T + 1_600 });
      expect(await store.seen.seenAmong('career', 'c-1', ['e-old'])).toEqual(new Set(['e-old']));
      expect(store.health.problem).toBeUndefined();
    }

    it('is refused, writing nothing, once another replica took the lease', async () => {
      const { backend, store } = await preparedStore();
      await backend.pool.query("UPDATE changefeed_leases SET holder = 'b', epoch = 2 WHERE tenant = $1", [tenant]);
      await refusedLeavingAll(store);
    });

    it('is refused, writing nothing, once the lease expired on the database clock', async () => {
      const { backend, store } = await preparedStore();
      await backend.pool.query(
        "UPDATE changefeed_leases SET expires_at = now() - interval '1 second' WHERE tenant = $1",
        [tenant],
      );
      await refusedLeavingAll(store);
    });

    it("is refused without asking the database once the holder's own deadline passed", async () => {
      let valid = true;
      const { backend, store } = await preparedStore(() => valid);
      valid = false;
      const before = backend.activity.statements;
      await refusedLeavingAll(store);
      expect(backend.activity.statements - before).toBe(2); // the two reads of refusedLeavingAll alone
    });

    it("is written in a transaction when the server does not know the statement's name (a pooler renames them)", async () => {
      const { backend, store } = await preparedStore();
      await backend.pool.query('DEALLOCATE ALL');
      await poll(store, [], T + 2_000);
      expect(backend.gate.names.executable).toBe(false);
      expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({ windowEnd: T + 2_000 });
      // The fence, the cursor, COMMIT: each alone from now on.
      expect(await cost(backend.activity, () => poll(store, [], T + 3_000))).toEqual({
        transactions: 1,
        statements: 3,
      });
    });

    it('writes under the lease it holds, the prune of old seen ids with it', async () => {
      const { store } = await preparedStore();
      await poll(store, [], T + 10 * HOUR);
      expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({ windowEnd: T + 10 * HOUR });
      expect(await store.seen.seenAmong('career', 'c-1', ['e-old'])).toEqual(new Set());
    });
  });

  it("acknowledges a delivered batch in one statement that checks the lease, and refuses it once the lease is another's", async () => {
    const { backend, store } = await fencedStore();
    await poll(store, [entry('e-1'), entry('e-2'), entry('e-3')], T + 1_000);
    const [first, second, third] = await store.outbox.pending('a', 0, 10);
    // On a connection that has not prepared it: a transaction (the fence, the ack, COMMIT); then one round trip.
    expect(await cost(backend.activity, () => store.outbox.markDelivered('a', [first!.seq], T + 2))).toEqual({
      transactions: 1,
      statements: 3,
    });
    expect(await cost(backend.activity, () => store.outbox.markDelivered('a', [second!.seq], T + 3))).toEqual({
      transactions: 1,
      statements: 1,
    });
    await backend.pool.query("UPDATE changefeed_leases SET holder = 'b', epoch = 2 WHERE tenant = $1", [tenant]);
    await expect(store.outbox.markDelivered('a', [third!.seq], T + 4)).rejects.toMatchObject({ code: 'LEASE_LOST' });
    expect((await store.outbox.pending('a', 0, 10)).map((d) => d.seq)).toEqual([third!.seq]);
  });

  it('refuses the poll, writing nothing, once another replica took the lease', async () => {
    const { backend, store } = await fencedStore();
    await poll(store, [], T + 1_000);
    await backend.pool.query("UPDATE changefeed_leases SET holder = 'b', epoch = 2 WHERE tenant = $1", [tenant]);
    store.deferState({ rates: [rateOf(9)] });
    await expect(poll(store, [entry('e-1')], T + 2_000)).rejects.toMatchObject({ code: 'LEASE_LOST' });
    await expect(store.watchedLogs.registerAll([discovered('c-9')])).rejects.toMatchObject({ code: 'LEASE_LOST' });
    expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({ windowEnd: T + 1_000 });
    expect(await store.watchedLogs.get('career', 'c-9')).toBeUndefined();
    expect(await store.journalSize()).toBe(0);
    expect(await store.rates.list()).toEqual([]);
  });
});

describe('what a poll costs the SQLite store', () => {
  const open: SqliteStoreBackend[] = [];
  afterEach(async () => {
    vi.useRealTimers();
    for (const backend of open.splice(0)) await backend.close();
  });

  async function sqliteStore() {
    const backend = new SqliteStoreBackend({ stateDir: makeTempDir(), store: storeConfigSchema.parse({}) });
    open.push(backend);
    const store = await backend.tenantStore('t');
    await prepare(store);
    return { backend, store };
  }

  it('is one transaction of two statements when the poll found nothing', async () => {
    const { backend, store } = await sqliteStore();
    // The cursor and the prune of old seen ids: nothing is looked up for a read of nothing.
    expect(await cost(backend.activity, () => poll(store, [], T + 1_000))).toEqual({
      transactions: 1,
      statements: 2,
    });
  });

  it('is one transaction for a poll with one new entry', async () => {
    const { backend, store } = await sqliteStore();
    // The facts (seen, journal), the seen id, the head, the event, its deliveries, the new head,
    // the cursor, the prune.
    expect(await cost(backend.activity, () => poll(store, [entry('e-1')], T + 1_000))).toEqual({
      transactions: 1,
      statements: 9,
    });
  });

  it('writes the learned rate with the next poll, or in a transaction of its own when none comes in time', async () => {
    const { backend, store } = await sqliteStore();
    store.deferState({ rates: [rateOf(2)], meta: { 'budget.snapshot': 'a' } });
    store.deferState({ rates: [rateOf(3)] });
    expect(await store.rates.list()).toEqual([]);
    // The poll's two statements, the rate and the named value: still one commit.
    expect(await cost(backend.activity, () => poll(store, [], T + 1_000))).toEqual({
      transactions: 1,
      statements: 4,
    });
    expect((await store.rates.list()).map((r) => r.events)).toEqual([3]);
    expect(await store.getMeta('budget.snapshot')).toBe('a');

    vi.useFakeTimers();
    store.deferState({ rates: [rateOf(5)] });
    const alone = await cost(backend.activity, () => vi.advanceTimersByTimeAsync(DEFERRED_STATE_FLUSH_MS));
    expect(alone).toEqual({ transactions: 1, statements: 1 });
    expect((await store.rates.list()).map((r) => r.events)).toEqual([5]);
  });

  it("reads every tenant's dead-letter re-queue count in one statement, and sees a re-queue at once", async () => {
    const { backend, store } = await sqliteStore();
    const others = await Promise.all(Array.from({ length: 20 }, (_, i) => backend.tenantStore(`t-${i}`)));
    const all = [store, ...others];
    await Promise.all(all.map((s) => s.deadLetters.requeueCount()));
    // Within the count's age every tenant answers from the one read.
    const asked = await cost(backend.activity, () => Promise.all(all.map((s) => s.deadLetters.requeueCount())));
    expect(asked.statements).toBeLessThanOrEqual(1);
    await ingest(store, [entry('e-1')]);
    const [pending] = await store.outbox.pending('a', 0, 10);
    await store.outbox.markDead('a', [{ seq: pending!.seq, error: 'x' }], T);
    expect(await store.deadLetters.requeueSink('a', T)).toBe(1);
    expect(await store.deadLetters.requeueCount()).toBe(1);
    expect(await others[0]!.deadLetters.requeueCount()).toBe(0);
  });

  it("asks about a changed page of a skill's log in one statement, and ingests it with one look-up of each kind", async () => {
    const { store } = await sqliteStore();
    const db = store.db;
    const page = Array.from({ length: 50 }, (_, i) => entry(`s-${i}`));
    await ingest(store, page.slice(1), { log: 'skill', objectId: 's-1' });
    // The poller's question before the ingest: one statement, a transaction of its own (was 50).
    expect(
      await executions(db, () =>
        store.seen.seenAmong(
          'skill',
          's-1',
          page.map((e) => e.id),
        ),
      ),
    ).toEqual({
      statements: 1,
      outsideTransactions: 1,
    });
    // BEGIN; the facts (seen, journal) one statement each, whatever the page holds; one new entry's
    // seen id, head, event, deliveries, new head; the cursor; COMMIT (were 103 statements).
    expect(await executions(db, () => ingest(store, page, { log: 'skill', objectId: 's-1' }))).toEqual({
      statements: 10,
      outsideTransactions: 1,
    });
    expect(await entryIdsInJournal(store)).toContain('s-0');
  });

  it("registers a discovery's whole list in one transaction", async () => {
    const { backend, store } = await sqliteStore();
    const list = Array.from({ length: 25 }, (_, i) => discovered(`c-${i + 1}`));
    expect(await cost(backend.activity, () => store.watchedLogs.registerAll(list))).toEqual({
      transactions: 1,
      statements: 1,
    });
  });
});
