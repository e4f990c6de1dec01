import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LeaseTable } from '../../src/cluster/leaseTable.js';
import { databaseFence } from '../../src/cluster/writeFence.js';
import type { ChangefeedStore } from '../../src/store/changefeedStore.js';
import { executeText } from '../../src/store/postgres/executeText.js';
import type { StoreActivity } from '../../src/store/storeActivity.js';
import { acquireOne } from '../support/acquireOne.js';
import { POSTGRES_URL } from '../support/postgresAdmin.js';
import { entry, HOUR, ingest, T } from './contract/storeFixtures.js';
import { admin, openBackend, prepare, waiterBehind } from './postgresTestDb.js';

const LEASE_MS = 30_000;
const tenant = "o'hara\\x";

async function cost(activity: StoreActivity, work: () => Promise<unknown>) {
  const before = activity.statements;
  await work();
  return activity.statements - before;
}

/** A poll that found nothing, as the window walker commits it: the cursor moves, old seen ids are forgotten. */
const poll = (store: ChangefeedStore, windowEnd: number) =>
  ingest(store, [], { windowEnd, now: windowEnd, pruneSeenBefore: windowEnd - 2 * HOUR });

describe.skipIf(!admin)('the fenced one-statement writes and the EXECUTEs in simple queries, attacked', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  async function fencedStore(leaseMs = LEASE_MS) {
    const backend = await openBackend();
    const leases = new LeaseTable(backend.leasePool, { leaseMs });
    expect(await acquireOne(leases, tenant, 'a')).toMatchObject({ epoch: 1 });
    const store = await backend.tenantStore(tenant, {
      fence: databaseFence({ tenant, holder: 'a', epoch: 1 }, leaseMs),
    });
    await prepare(store);
    return { backend, store };
  }

  it('recovers when the server forgets the prepared statements a second time (DEALLOCATE ALL after EXECUTE is off)', async () => {
    const { backend, store } = await fencedStore();
    await poll(store, T + 1_000);
    await poll(store, T + 1_500);
    await backend.pool.query('DEALLOCATE ALL');
    await poll(store, T + 2_000);
    expect(backend.gate.names.executable).toBe(false);
    // Prepared again, each alone, on the connection that replaced the first.
    await poll(store, T + 3_000);
    // A pooler's reset (DISCARD ALL) on that connection too.
    await backend.pool.query('DISCARD ALL');
    await poll(store, T + 4_000);
    await poll(store, T + 5_000);
    expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({ windowEnd: T + 5_000 });
    // A read by its name, outside a transaction, through the same.
    await backend.pool.query('DISCARD ALL');
    expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({ windowEnd: T + 5_000 });
  });

  /** Sets the lease's expiry in the past on the database clock right after the next fence check's answer (a pause there). */
  function expireAfterNextFenceCheck(
    backend: Awaited<ReturnType<typeof openBackend>>,
    isCheck = (text: string) => text.startsWith('BEGIN') && text.includes('FOR KEY SHARE'),
  ) {
    const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
    const original = proto.query;
    const state = { expired: false };
    vi.spyOn(proto, 'query').mockImplementation(function (this: pg.Client, ...args: unknown[]) {
      const result = original.apply(this, args);
      const text = typeof args[0] === 'string' ? args[0] : '';
      if (state.expired || !isCheck(text)) return result;
      state.expired = true;
      return (result as Promise<unknown>).then(async (answer) => {
        await backend.leasePool.query(
          "UPDATE changefeed_leases SET expires_at = clock_timestamp() - interval '1 second' WHERE tenant = $1",
          [tenant],
        );
        return answer;
      });
    });
    return state;
  }

  // The batch's statement is not prepared on the connection yet: it takes a transaction, and the
  // lease runs out on the database clock between its BEGIN and the statement, which checks it.
  it('says LEASE_LOST for a poll that found nothing when the lease expires between the BEGIN of the batch and its statement', async () => {
    const { backend, store } = await fencedStore();
    store.deferState({ meta: { budget: 'x' } });
    const state = expireAfterNextFenceCheck(backend, (text) => text.startsWith('BEGIN; SET LOCAL'));
    await expect(poll(store, T + 1_000)).rejects.toMatchObject({ code: 'LEASE_LOST' });
    expect(state.expired).toBe(true);
    expect(await store.watchedLogs.get('career', 'c-1')).not.toMatchObject({ windowEnd: T + 1_000 });
    expect(await store.getMeta('budget')).toBeUndefined();
  });

  it('says LEASE_LOST for an ack when the lease expires between the fence check and the statement', async () => {
    const { backend, store } = await fencedStore();
    await ingest(store, [entry('e-1')], { windowEnd: T + 1_000, now: T + 1_000 });
    const [first] = await store.outbox.pending('a', 0, 10);
    const state = expireAfterNextFenceCheck(backend);
    await expect(store.outbox.markDelivered('a', [first!.seq], T + 2)).rejects.toMatchObject({ code: 'LEASE_LOST' });
    expect(state.expired).toBe(true);
    expect(await store.outbox.counts('a')).toMatchObject({ pending: 1 });
  });

  /** A fenced store whose nothing-new poll is one round trip (its statement prepared on the connection). */
  async function oneRoundTripStore() {
    const fenced = await fencedStore();
    await poll(fenced.store, T + 1_000);
    expect(await cost(fenced.backend.activity, () => poll(fenced.store, T + 1_500))).toBe(1);
    return fenced;
  }

  /**
   * A nothing-new poll started while `taker` holds the tenant's lease row in an open transaction,
   * once the poll's statement waits for that row: the poll (its rejection handled) and the pid of
   * the session that waits.
   */
  async function pollBehindLeaseRow(fenced: Awaited<ReturnType<typeof fencedStore>>, taker: pg.PoolClient) {
    await taker.query('BEGIN');
    await taker.query('SELECT 1 FROM changefeed_leases WHERE tenant = $1 FOR UPDATE', [tenant]);
    let settled = false;
    const polled = poll(fenced.store, T + 2_000).finally(() => {
      settled = true;
    });
    polled.catch(() => undefined);
    // The tenant's write alone (the batch of advances passes a locked lease row over), waiting behind `taker`.
    return { polled, pid: await waiterBehind(taker, () => settled) };
  }

  it('says LEASE_LOST, writing nothing, when a takeover that held the lease row commits while the one statement waits for it', async () => {
    const fenced = await oneRoundTripStore();
    const { backend, store } = fenced;
    const taker = await backend.leasePool.connect();
    try {
      const { polled } = await pollBehindLeaseRow(fenced, taker);
      await taker.query("UPDATE changefeed_leases SET holder = 'b', epoch = 2 WHERE tenant = $1", [tenant]);
      await taker.query('COMMIT');
      await expect(polled).rejects.toMatchObject({ code: 'LEASE_LOST' });
    } finally {
      taker.release();
    }
    expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({ windowEnd: T + 1_500 });
  });

  /** Once `count` sessions wait for a lock `blocker`'s session holds (pg_blocking_pids). */
  async function waitersBehind(blocker: pg.ClientBase, count: number): Promise<void> {
    const { rows } = await blocker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    for (;;) {
      const waiting = await admin!.query(
        'SELECT pid FROM pg_stat_activity WHERE $1::int = ANY (pg_blocking_pids(pid))',
        [rows[0]!.pid],
      );
      if ((waiting.rowCount ?? 0) >= count) return;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  it('keeps a flush waiting on state a batched poll handed back (its lease row locked), and refuses the flush when a takeover commits', async () => {
    const { backend, store } = await fencedStore();
    await poll(store, T + 1_000);
    const taker = await backend.leasePool.connect();
    try {
      await taker.query('BEGIN');
      await taker.query('SELECT 1 FROM changefeed_leases WHERE tenant = $1 FOR UPDATE', [tenant]);
      store.deferState({ meta: { budget: 'x' } });
      // The flush's fence check waits behind the taker; the poll's batch takes the state, passes the
      // locked lease row over and hands the state back, and the poll's write alone waits there too.
      const flushed = store.flushDeferred();
      flushed.catch(() => undefined);
      const polled = poll(store, T + 2_000);
      polled.catch(() => undefined);
      await waitersBehind(taker, 2);
      await taker.query("UPDATE changefeed_leases SET holder = 'b', epoch = 2 WHERE tenant = $1", [tenant]);
      await taker.query('COMMIT');
      await expect(polled).rejects.toMatchObject({ code: 'LEASE_LOST' });
      // Not a flush that says it wrote what nobody wrote.
      await expect(flushed).rejects.toMatchObject({ code: 'LEASE_LOST' });
    } finally {
      taker.release();
    }
    expect(await store.getMeta('budget')).toBeUndefined();
  });

  it('recovers from its connection cut mid-statement (a server restart): unavailable, then one round trip again', async () => {
    const fenced = await oneRoundTripStore();
    const { backend, store } = fenced;
    const taker = await backend.leasePool.connect();
    try {
      const { polled, pid } = await pollBehindLeaseRow(fenced, taker);
      await backend.leasePool.query('SELECT pg_terminate_backend($1)', [pid]);
      await expect(polled).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    } finally {
      await taker.query('ROLLBACK');
      taker.release();
    }
    // The next write finds a live connection (it prepares the statement there), and the one after is one round trip.
    await poll(store, T + 3_000);
    expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({ windowEnd: T + 3_000 });
    expect(store.health.problem).toBeUndefined();
    expect(await cost(backend.activity, () => poll(store, T + 4_000))).toBe(1);
  });

  it('says STORE_UNAVAILABLE when the server ends the connection as a timed-out write reads its lease row again, then writes on a live one', async () => {
    const fenced = await oneRoundTripStore();
    const { backend, store } = fenced;
    const taker = await backend.leasePool.connect();
    // The read of the lease row after the timeout (leaseNow) is sent on a connection the server has just ended.
    const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
    const original = proto.query;
    let ended = false;
    vi.spyOn(proto, 'query').mockImplementation(function (this: pg.Client, ...args: unknown[]) {
      const text = typeof args[0] === 'string' ? args[0] : '';
      if (ended || !text.includes('WITH valid AS')) return original.apply(this, args);
      ended = true;
      const pid = (this as unknown as { processID: number }).processID;
      return backend.leasePool
        .query('SELECT pg_terminate_backend($1)', [pid])
        .then(() => original.apply(this, args) as Promise<unknown>);
    });
    try {
      const { polled, pid } = await pollBehindLeaseRow(fenced, taker);
      // Its wait ended as the bound ends it (57014).
      await backend.leasePool.query('SELECT pg_cancel_backend($1)', [pid]);
      await expect(polled).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
      expect(ended).toBe(true);
    } finally {
      vi.restoreAllMocks();
      await taker.query('ROLLBACK');
      taker.release();
    }
    await poll(store, T + 3_000);
    expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({ windowEnd: T + 3_000 });
    expect(store.health.problem).toBeUndefined();
  });

  it('bounds a one-statement write blocked on the lease row by the fence statement timeout', async () => {
    const leaseMs = 1_200; // a bound of 200 ms
    const { backend, store } = await fencedStore(leaseMs);
    // Renewed long enough on the database clock that the lease stays valid throughout.
    await backend.leasePool.query(
      "UPDATE changefeed_leases SET expires_at = clock_timestamp() + interval '1 hour' WHERE tenant = $1",
      [tenant],
    );
    await poll(store, T + 1_000);
    const locker = await backend.leasePool.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('SELECT 1 FROM changefeed_leases WHERE tenant = $1 FOR UPDATE', [tenant]);
      for (const windowEnd of [T + 2_000, T + 3_000]) {
        const started = performance.now();
        await expect(poll(store, windowEnd)).rejects.toBeDefined();
        expect(performance.now() - started).toBeLessThan(10 * (leaseMs / 6));
      }
    } finally {
      await locker.query('ROLLBACK');
      locker.release();
    }
    await poll(store, T + 4_000);
    expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({ windowEnd: T + 4_000 });
    expect(await cost(backend.activity, () => poll(store, T + 5_000))).toBe(1);
  });

  it.each([
    ['on', 'on'],
    ['off', 'off'],
  ])('reads every literal as the bound value would be read (standard_conforming_strings %s)', async (_, conforming) => {
    const client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    try {
      await client.query(`SET standard_conforming_strings = ${conforming}`);
      const texts = [
        "o'hara",
        "''",
        '\\',
        "\\'",
        "a\\'; SELECT 1; --",
        'say "hi"',
        '{x,"y"}',
        'NULL',
        '',
        'é ✓ 𝄞 \u2028 \uFEFF',
        '\uD800',
        '$$',
        '$1',
        'x'.repeat(1 << 18) + "'\\",
      ];
      const numbers = [
        0,
        -0,
        1.5,
        Number.MAX_SAFE_INTEGER,
        -Number.MAX_SAFE_INTEGER,
        Number.MAX_VALUE,
        Number.MIN_VALUE,
        1e21,
        NaN,
        Infinity,
        -Infinity,
      ];
      const sql = 'SELECT $1::text AS t, $2::float8 AS f, $3::text[] AS a, $4::float8[] AS n, $5::bigint AS b';
      const name = 'attack_literal';
      for (const text of texts)
        for (const number of numbers) {
          const params = [text, number, [text, null, 'NULL', text], [number, null], 42];
          const bound = await client.query({ name, text: sql, values: params });
          const execute = executeText(
            name,
            params,
            (t) => client.escapeLiteral(t),
            (id) => client.escapeIdentifier(id),
          )!;
          const simple = await client.query(execute);
          expect(simple.rows).toEqual(bound.rows);
        }
      const { rows } = await client.query('SELECT count(*)::int AS n FROM pg_prepared_statements');
      expect(rows).toEqual([{ n: 1 }]);
    } finally {
      await client.end();
    }
  });
});
