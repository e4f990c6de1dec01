import { randomInt } from 'node:crypto';
import type pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LeaseTable } from '../../src/cluster/leaseTable.js';
import { connectLeaseAdmin, createLeaseSchema, type LeaseSchema } from '../support/leaseDatabase.js';
import { acquireOne } from '../support/acquireOne.js';

// A release does not wait for its epoch's open write (FOR NO KEY UPDATE SKIP LOCKED): what
// keeps a takeover off is the write's FOR KEY SHARE, which PostgreSQL carries over to the
// released row version. These tests put a fence check in the one window the carry-over does not
// obviously cover: its statement's snapshot taken before the release commits, its row lock taken
// after (a backend descheduled between the two on a loaded machine). The gate, an advisory lock
// in a one-time filter, holds the statement there; nothing sleeps.

let admin: pg.Client | undefined;
let db: LeaseSchema;

beforeAll(async () => {
  admin = await connectLeaseAdmin('lease release race tests');
});
afterEach(async () => {
  await db?.close();
});
afterAll(async () => {
  await admin?.end();
});

async function setup(ctx: { skip: (note?: string) => void }): Promise<{ table: LeaseTable; pool: pg.Pool }> {
  if (!admin) ctx.skip('no PostgreSQL');
  db = await createLeaseSchema(admin!);
  const pool = db.pool({ max: 8 });
  return { table: new LeaseTable(pool, { leaseMs: 30_000 }), pool };
}

/** checkLease's test of claim {acme, a, 1}, held after its snapshot by the advisory lock `gate`. */
function gatedFence(gate: number): string {
  return `SELECT 1 FROM changefeed_leases
     WHERE tenant = 'acme' AND holder = 'a' AND epoch = 1 AND expires_at > clock_timestamp()
       AND (SELECT true FROM pg_advisory_xact_lock(${gate}))
     FOR KEY SHARE`;
}

/** Resolves once a backend other than ours waits for an advisory lock (our gate) or a row lock. */
async function untilWaiting(event: 'advisory' | 'transactionid' | 'tuple', pid: number): Promise<void> {
  for (;;) {
    const { rows } = await db.admin.query<{ waiting: boolean }>(
      `SELECT wait_event = $1 AS waiting FROM pg_stat_activity WHERE pid = $2`,
      [event, pid],
    );
    if (rows[0]?.waiting) return;
    // Polls pg_stat_activity; the database answers each look, no timer decides anything.
    await db.admin.query('SELECT pg_stat_clear_snapshot()');
  }
}

async function pidOf(client: pg.PoolClient): Promise<number> {
  return (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
}

/**
 * `fence(gate)` (a fence check held after its snapshot by the advisory lock `gate`) sent in a
 * transaction of `writer`, once it waits at the gate `gatekeeper` holds; `open` lets it on.
 */
async function checkHeldAtGate(
  gatekeeper: pg.PoolClient,
  writer: pg.PoolClient,
  fence: (gate: number) => string = gatedFence,
): Promise<{ writerPid: number; check: Promise<pg.QueryResult>; open: () => Promise<unknown> }> {
  const gate = randomInt(1, 2 ** 31);
  await gatekeeper.query(`SELECT pg_advisory_lock(${gate})`);
  await writer.query('BEGIN');
  const writerPid = await pidOf(writer);
  const check = writer.query(fence(gate));
  await untilWaiting('advisory', writerPid);
  return { writerPid, check, open: () => gatekeeper.query(`SELECT pg_advisory_unlock(${gate})`) };
}

describe('lease release races (the release does not wait for the write of its epoch)', () => {
  it('a fence check whose snapshot predates the release, locking after a takeover, is refused', async (ctx) => {
    const { table, pool } = await setup(ctx);
    await acquireOne(table, 'acme', 'a');
    const gatekeeper = await pool.connect();
    const writer = await pool.connect();
    try {
      const { check, open } = await checkHeldAtGate(gatekeeper, writer);
      expect(await table.release('acme', 'a', 1)).toBe(true);
      expect((await acquireOne(table, 'acme', 'b'))?.epoch).toBe(2);
      await open();
      // Epoch 2 was taken before the old check locked the row: the old epoch must not pass.
      expect((await check).rowCount).toBe(0);
      await writer.query('ROLLBACK');
    } finally {
      gatekeeper.release();
      writer.release(true);
    }
  });

  it('a fence check whose snapshot predates the release, locking after it, passes and keeps the takeover off until it ends', async (ctx) => {
    const { table, pool } = await setup(ctx);
    await acquireOne(table, 'acme', 'a');
    const gatekeeper = await pool.connect();
    const writer = await pool.connect();
    try {
      const { check, open } = await checkHeldAtGate(gatekeeper, writer);
      expect(await table.release('acme', 'a', 1)).toBe(true);
      await open();
      // Its snapshot still saw epoch 1 of a: the check passes (KEY SHARE is not checked again
      // against a version that changed no key column), and its lock follows the row to the
      // released version, so no new epoch is taken while the old write is open.
      expect((await check).rowCount).toBe(1);
      expect(await acquireOne(table, 'acme', 'b')).toBeUndefined();
      await writer.query('COMMIT');
      expect((await acquireOne(table, 'acme', 'b'))?.epoch).toBe(2);
    } finally {
      gatekeeper.release();
      writer.release(true);
    }
  });
});

describe('lease release races, the batched lease check (AdvanceBatch: FOR KEY SHARE SKIP LOCKED)', () => {
  // Not fixed: PostgreSQL follows a KEY SHARE lock from the version its snapshot saw to the
  // released version and waits there for a conflicting lock whatever SKIP LOCKED says (a release
  // locking FOR UPDATE would mark the key changed: the check would be run again at the latest
  // version, which SKIP LOCKED passes over). So the whole batch waits behind such a lock (a
  // session holding the free row FOR UPDATE) up to the fenced bound, then its timed-out fence
  // answers LEASE_LOST. Needs the snapshot-before-release window and that lock together.
  it.fails(
    'a batched check whose snapshot predates the release does not wait behind a FOR UPDATE of the released row',
    async (ctx) => {
      const { table, pool } = await setup(ctx);
      await acquireOne(table, 'acme', 'a');
      const gatekeeper = await pool.connect();
      const writer = await pool.connect();
      const operator = await pool.connect();
      try {
        const operatorPid = await pidOf(operator);
        const held = await checkHeldAtGate(gatekeeper, writer, (gate) =>
          gatedFence(gate).replace('FOR KEY SHARE', 'FOR KEY SHARE SKIP LOCKED'),
        );
        const { writerPid, open } = held;
        let settled = false;
        const check = held.check.finally(() => (settled = true));
        expect(await table.release('acme', 'a', 1)).toBe(true);
        await operator.query('BEGIN');
        await operator.query("SELECT 1 FROM changefeed_leases WHERE tenant = 'acme' FOR UPDATE");
        await open();
        let blocked = false;
        while (!settled && !blocked) {
          const { rows } = await db.admin.query(
            'SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND $2::int = ANY (pg_blocking_pids(pid))',
            [writerPid, operatorPid],
          );
          blocked = rows.length > 0;
        }
        await operator.query('COMMIT');
        await check;
        await writer.query('ROLLBACK');
        expect(blocked).toBe(false);
      } finally {
        gatekeeper.release();
        writer.release(true);
        operator.release();
      }
    },
  );
});
