import type pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LeaseTable } from '../../src/cluster/leaseTable.js';
import { checkLease, LeaseLostError } from '../../src/cluster/writeFence.js';
import { connectLeaseAdmin, createLeaseSchema, type LeaseSchema } from '../support/leaseDatabase.js';

let admin: pg.Client | undefined;
let db: LeaseSchema;

beforeAll(async () => {
  admin = await connectLeaseAdmin('lease table tests');
});
afterEach(async () => {
  await db?.close();
});
afterAll(async () => {
  await admin?.end();
});

/** A fresh schema and a lease table on it, or a skip when there is no PostgreSQL. */
async function setup(
  ctx: { skip: (note?: string) => void },
  leaseMs = 10_000,
): Promise<{ table: LeaseTable; pool: pg.Pool }> {
  if (!admin) ctx.skip('no PostgreSQL');
  db = await createLeaseSchema(admin!);
  const pool = db.pool({ max: 12 });
  return { table: new LeaseTable(pool, { leaseMs }), pool };
}

/**
 * Makes the tenant's lease expire now, as time would: tests use long leases and this, so a slow
 * step on a loaded machine cannot let a lease lapse early.
 */
async function expire(tenant: string): Promise<void> {
  await db.query("UPDATE changefeed_leases SET expires_at = clock_timestamp() - interval '1 ms' WHERE tenant = $1", [
    tenant,
  ]);
}

/** Waits, on the database's clock, until the tenant's lease has expired. */
async function untilExpired(tenant: string): Promise<void> {
  const { rows } = await db.query<{ ms: number }>(
    `SELECT greatest(0, extract(epoch FROM expires_at - clock_timestamp()) * 1000)::float8 AS ms
       FROM changefeed_leases WHERE tenant = $1`,
    [tenant],
  );
  await db.query('SELECT pg_sleep($1)', [(rows[0]!.ms + 20) / 1000]);
}

describe('LeaseTable', () => {
  it('ten replicas racing for one tenant: exactly one gets it, and each acquisition has its own epoch', async (ctx) => {
    // A long lease, so a slow connection on a loaded machine cannot arrive after it expired.
    const { table } = await setup(ctx, 30_000);
    const race = async (): Promise<number> => {
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => table.acquire('acme', `r${i}`)));
      const winners = results.filter((r) => r !== undefined);
      expect(winners).toHaveLength(1);
      return winners[0]!.epoch;
    };
    const epochs = [await race()]; // a new row
    const [row] = await table.list();
    await table.release('acme', row!.holder!, row!.epoch);
    epochs.push(await race()); // a released lease
    await db.query("UPDATE changefeed_leases SET expires_at = clock_timestamp() - interval '1 second'");
    epochs.push(await race()); // an expired lease
    expect(epochs).toEqual([1, 2, 3]);
  });

  it('renews only the holder’s own, unexpired leases at their epoch', async (ctx) => {
    const { table } = await setup(ctx);
    const a = await table.acquire('acme', 'a');
    await table.acquire('globex', 'a');
    expect(a?.epoch).toBe(1);
    expect(await table.acquire('acme', 'b')).toBeUndefined();
    const renewed = await table.renew('a', [
      { tenant: 'acme', epoch: 1 },
      { tenant: 'globex', epoch: 7 },
    ]);
    expect(renewed.map((r) => r.tenant)).toEqual(['acme']);
    expect(renewed[0]!.expiresAt.getTime()).toBeGreaterThan(a!.expiresAt.getTime());
    expect(await table.renew('b', [{ tenant: 'acme', epoch: 1 }])).toEqual([]);
    await expire('acme');
    expect(await table.renew('a', [{ tenant: 'acme', epoch: 1 }])).toEqual([]); // too late: it is free
    expect((await table.acquire('acme', 'b'))?.epoch).toBe(2);
  });

  it('releases only its own lease, which another replica can then take at once', async (ctx) => {
    const { table } = await setup(ctx);
    await table.acquire('acme', 'a');
    expect(await table.release('acme', 'b', 1)).toBe(false);
    expect(await table.release('acme', 'a', 2)).toBe(false);
    expect(await table.release('acme', 'a', 1)).toBe(true);
    expect((await table.acquire('acme', 'b'))?.epoch).toBe(2);
    const [row] = await table.list();
    expect(row).toMatchObject({ tenant: 'acme', holder: 'b', epoch: 2 });
    expect(row!.expiresInMs).toBeGreaterThan(9_000);
  });

  it('the fence passes for the holder and throws LEASE_LOST once another replica took over', async (ctx) => {
    const { table, pool } = await setup(ctx);
    await table.acquire('acme', 'a');
    const client = await pool.connect();
    try {
      await checkLease(client, { tenant: 'acme', holder: 'a', epoch: 1 });
      await expire('acme');
      await table.acquire('acme', 'b');
      const error = await checkLease(client, { tenant: 'acme', holder: 'a', epoch: 1 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LeaseLostError);
      expect(error).toMatchObject({ code: 'LEASE_LOST', tenant: 'acme' });
      // An expired lease that nobody took yet is no more valid for writing.
      await expire('acme');
      await expect(checkLease(client, { tenant: 'acme', holder: 'b', epoch: 2 })).rejects.toThrow(LeaseLostError);
    } finally {
      client.release();
    }
  });

  it('a takeover waits for a write that passed the fence to commit (FOR SHARE)', async (ctx) => {
    // The lease must lapse by itself (an UPDATE to expire it would wait for the writer's lock).
    const { table, pool } = await setup(ctx, 1_500);
    await table.acquire('acme', 'a');
    const writer = await pool.connect();
    try {
      await writer.query('BEGIN');
      await checkLease(writer, { tenant: 'acme', holder: 'a', epoch: 1 });
      await untilExpired('acme'); // the writer paused past its lease, inside its transaction
      let takenAt: number | undefined;
      const takeover = table.acquire('acme', 'b').then((lease) => {
        takenAt = Date.now();
        return lease;
      });
      // The takeover's statement waits on the writer's row lock: seen in pg_stat_activity, not guessed.
      for (;;) {
        const { rows } = await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = 'test' AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO changefeed_leases%'`,
        );
        if (rows[0]!.n > 0) break;
        if (takenAt !== undefined) throw new Error('the takeover did not wait for the fenced write');
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const committedAt = Date.now();
      await writer.query('COMMIT');
      const lease = await takeover;
      expect(lease?.epoch).toBe(2);
      expect(takenAt!).toBeGreaterThanOrEqual(committedAt);
    } finally {
      writer.release();
    }
  });

  it('a writer paused inside its transaction cannot hold a takeover off forever once the session times out', async (ctx) => {
    const { table } = await setup(ctx, 1_500);
    // What the store's pool must set: PostgreSQL ends a transaction left idle this long, and
    // with it the lease row's lock, so the next holder is not stuck behind a stopped process.
    const writerPool = db.pool({ options: '-c idle_in_transaction_session_timeout=1000' });
    await table.acquire('acme', 'a');
    const writer = await writerPool.connect();
    writer.on('error', () => undefined);
    try {
      await writer.query('BEGIN');
      await checkLease(writer, { tenant: 'acme', holder: 'a', epoch: 1 });
      // ...and the process stops here, its transaction open.
      await untilExpired('acme');
      const lease = await table.acquire('acme', 'b'); // waits until the session is ended
      expect(lease?.epoch).toBe(2);
      await expect(writer.query('COMMIT')).rejects.toThrow();
    } finally {
      writer.release(true);
    }
  });

  it('lists live holders, forgets unconfigured free tenants and releases what the holder does not keep', async (ctx) => {
    const { table } = await setup(ctx);
    await table.heartbeat('a');
    await table.heartbeat('b');
    expect(await table.liveInstances()).toEqual(['a', 'b']);
    for (const tenant of ['t1', 't2', 't3']) await table.acquire(tenant, 'a');
    await table.acquire('t4', 'b');
    expect(await table.releaseAllExcept('a', ['t1'])).toEqual(['t2', 't3']);
    expect(await table.forgetTenants(['t1', 't2'])).toEqual(['t3']); // t4 is validly held: kept
    const rows = await table.list();
    expect(rows.map((r) => [r.tenant, r.holder ?? null, r.holderLive])).toEqual([
      ['t1', 'a', true],
      ['t2', null, false],
      ['t4', 'b', true],
    ]);
    // a stops heartbeating: its last heartbeat ages past the lease.
    await db.query(
      "UPDATE changefeed_instances SET heartbeat_at = clock_timestamp() - interval '1 minute' WHERE instance_id = 'a'",
    );
    expect(await table.liveInstances()).toEqual(['b']);
    expect((await table.list()).find((r) => r.tenant === 't1')?.holderLive).toBe(false);
  });
});
