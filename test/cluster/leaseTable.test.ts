import type pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LeaseTable } from '../../src/cluster/leaseTable.js';
import { checkLease, LeaseLostError, type LeaseClaim } from '../../src/cluster/writeFence.js';
import { connectLeaseAdmin, createLeaseSchema, type LeaseSchema } from '../support/leaseDatabase.js';
import { acquireOne } from '../support/acquireOne.js';

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

/** Statements of this test's schema whose text starts like `pattern` and that wait for a lock now. */
async function waitingOnLock(pattern: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = 'test' AND wait_event_type = 'Lock' AND query LIKE $1 AND pid <> pg_backend_pid()`,
    [pattern],
  );
  return rows[0]!.n;
}

describe('LeaseTable', () => {
  it('ten replicas racing for one tenant: exactly one gets it, and each acquisition has its own epoch', async (ctx) => {
    // A long lease, so a slow connection on a loaded machine cannot arrive after it expired.
    const { table } = await setup(ctx, 30_000);
    const race = async (): Promise<number> => {
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => acquireOne(table, 'acme', `r${i}`)));
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
    const a = await acquireOne(table, 'acme', 'a');
    await acquireOne(table, 'globex', 'a');
    expect(a?.epoch).toBe(1);
    expect(await acquireOne(table, 'acme', 'b')).toBeUndefined();
    const { renewed } = await table.renew('a', [
      { tenant: 'acme', epoch: 1 },
      { tenant: 'globex', epoch: 7 },
    ]);
    expect(renewed.map((r) => r.tenant)).toEqual(['acme']);
    expect(renewed[0]!.expiresAt.getTime()).toBeGreaterThan(a!.expiresAt.getTime());
    expect(await table.renew('b', [{ tenant: 'acme', epoch: 1 }])).toEqual({ renewed: [], locked: [] });
    await expire('acme');
    expect(await table.renew('a', [{ tenant: 'acme', epoch: 1 }])).toEqual({ renewed: [], locked: [] }); // too late: it is free
    expect((await acquireOne(table, 'acme', 'b'))?.epoch).toBe(2);
  });

  it('releases only its own lease, which another replica can then take at once', async (ctx) => {
    const { table } = await setup(ctx);
    await acquireOne(table, 'acme', 'a');
    expect(await table.release('acme', 'b', 1)).toBe(false);
    expect(await table.release('acme', 'a', 2)).toBe(false);
    expect(await table.release('acme', 'a', 1)).toBe(true);
    expect((await acquireOne(table, 'acme', 'b'))?.epoch).toBe(2);
    const [row] = await table.list();
    expect(row).toMatchObject({ tenant: 'acme', holder: 'b', epoch: 2 });
    expect(row!.expiresInMs).toBeGreaterThan(9_000);
  });

  it('the fence passes for the holder and throws LEASE_LOST once another replica took over', async (ctx) => {
    const { table, pool } = await setup(ctx);
    await acquireOne(table, 'acme', 'a');
    const client = await pool.connect();
    // Each check in a transaction of its own, ended at once.
    const checkAlone = (claim: LeaseClaim): Promise<void> =>
      checkLease(client, claim, 'BEGIN').finally(() => client.query('ROLLBACK'));
    try {
      await checkAlone({ tenant: 'acme', holder: 'a', epoch: 1 });
      await expire('acme');
      await acquireOne(table, 'acme', 'b');
      const error = await checkAlone({ tenant: 'acme', holder: 'a', epoch: 1 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LeaseLostError);
      expect(error).toMatchObject({ code: 'LEASE_LOST', tenant: 'acme' });
      // An expired lease that nobody took yet is no more valid for writing.
      await expire('acme');
      await expect(checkAlone({ tenant: 'acme', holder: 'b', epoch: 2 })).rejects.toThrow(LeaseLostError);
    } finally {
      client.release();
    }
  });

  it('a renewal of three leases completes while a fenced write holds one open for 2 s (FOR KEY SHARE)', async (ctx) => {
    const { table, pool } = await setup(ctx, 30_000);
    for (const tenant of ['acme', 'globex', 'initech']) await acquireOne(table, tenant, 'a');
    const held = ['acme', 'globex', 'initech'].map((tenant) => ({ tenant, epoch: 1 }));
    const events: string[] = [];
    const writer = await pool.connect();
    try {
      await checkLease(writer, { tenant: 'acme', holder: 'a', epoch: 1 }, 'BEGIN');
      const longWrite = writer.query('SELECT pg_sleep(2)'); // a long statement inside the fence
      let settled = false;
      const renewal = table.renew('a', held).finally(() => {
        settled = true;
        events.push('renewed');
      });
      // Held open until the renewal is done or is seen waiting on a lock: events, not a time limit.
      while (!settled) {
        if ((await waitingOnLock('UPDATE changefeed_leases%')) > 0) {
          events.push('renewal waits for the write');
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await longWrite;
      await writer.query('COMMIT');
      events.push('write committed');
      expect((await renewal).renewed.map((r) => r.tenant).sort()).toEqual(['acme', 'globex', 'initech']);
      expect(events).toEqual(['renewed', 'write committed']);
    } finally {
      writer.release();
    }
  });

  it('a renewal passes over a lease row another session holds FOR UPDATE and answers it as locked, not refused', async (ctx) => {
    const { table, pool } = await setup(ctx, 30_000);
    const k2 = 'k2'.padEnd(64, '0');
    for (const tenant of ['acme', 'globex', 'initech']) await acquireOne(table, tenant, 'a', tenant.padEnd(64, '0'));
    const locker = await pool.connect();
    try {
      await locker.query('BEGIN');
      await locker.query("SELECT 1 FROM changefeed_leases WHERE tenant IN ('acme', 'globex') FOR UPDATE");
      // Held until the renewal answers: it must answer without waiting for the lock.
      const plain = await table.renew('a', [
        { tenant: 'acme', epoch: 1 },
        { tenant: 'initech', epoch: 1 },
        { tenant: 'gone', epoch: 1 },
      ]);
      expect(plain.renewed.map((r) => r.tenant)).toEqual(['initech']);
      expect(plain.locked).toEqual(['acme']);
      // A key that changed is asked again under the key's advisory lock: it passes over the row too.
      const rekeyed = await table.renew('a', [{ tenant: 'globex', epoch: 1, keyFingerprint: k2 }]);
      expect(rekeyed).toEqual({ renewed: [], locked: ['globex'] });
      // Only a lease still this holder's at that epoch is answered as locked.
      expect(await table.renew('b', [{ tenant: 'acme', epoch: 1 }])).toEqual({ renewed: [], locked: [] });
      expect(await table.renew('a', [{ tenant: 'acme', epoch: 2 }])).toEqual({ renewed: [], locked: [] });
      await locker.query('COMMIT');
    } finally {
      locker.release();
    }
    const after = await table.renew('a', [{ tenant: 'globex', epoch: 1, keyFingerprint: k2 }]);
    expect(after.renewed.map((r) => r.tenant)).toEqual(['globex']);
  });

  it('an acquisition answers the free rows it passed over (locked elsewhere), not those held validly or refused for their key', async (ctx) => {
    // The renewal's count stops once the holder's lease is lost at its local deadline; from then on
    // only the acquisition still meets the locked row, and it must say so for the lock to be seen.
    const { table, pool } = await setup(ctx, 30_000);
    const shared = 'shared'.padEnd(64, '0');
    await acquireOne(table, 'acme', 'a');
    await acquireOne(table, 'globex', 'a');
    await acquireOne(table, 'initech', 'a', shared);
    await acquireOne(table, 'hooli', 'a');
    expect(await table.release('hooli', 'a', 1)).toBe(true);
    await expire('acme');
    const locker = await pool.connect();
    try {
      await locker.query('BEGIN');
      await locker.query("SELECT 1 FROM changefeed_leases WHERE tenant IN ('acme', 'globex', 'hooli') FOR UPDATE");
      const answer = await table.acquireMany('b', [
        { tenant: 'acme' },
        { tenant: 'globex' },
        { tenant: 'hooli', keyFingerprint: shared },
        { tenant: 'stark' },
      ]);
      expect(answer.granted.map((g) => g.tenant)).toEqual(['stark']);
      // globex is validly held (nothing to take), hooli's key is initech's: neither was passed over.
      expect(answer.passedOver).toEqual(['acme']);
      await locker.query('COMMIT');
    } finally {
      locker.release();
    }
    const after = await table.acquireMany('b', [{ tenant: 'acme' }]);
    expect(after).toMatchObject({ granted: [{ tenant: 'acme', epoch: 2 }], passedOver: [] });
  });

  it('the release of what the holder does not keep answers its still valid rows it passed over (locked elsewhere)', async (ctx) => {
    // A lease lost at its local deadline while its row stays locked: until it runs out on the
    // database's clock too, this release is the only statement of the round that meets the row.
    const { table, pool } = await setup(ctx, 30_000);
    for (const tenant of ['acme', 'globex', 'initech', 'hooli']) await acquireOne(table, tenant, 'a');
    await expire('globex');
    const locker = await pool.connect();
    try {
      await locker.query('BEGIN');
      await locker.query("SELECT 1 FROM changefeed_leases WHERE tenant IN ('acme', 'globex') FOR UPDATE");
      // globex ran out already: the acquisition that is dealt it counts it, not this release.
      expect(await table.releaseAllExcept('a', ['hooli'])).toEqual({ released: ['initech'], passedOver: ['acme'] });
      await locker.query('COMMIT');
    } finally {
      locker.release();
    }
    expect(await table.releaseAllExcept('a', ['hooli'])).toEqual({ released: ['acme', 'globex'], passedOver: [] });
  });

  it('a takeover passes over the old holder’s open write, even after a renewal; takes the row once it ends, and then only the new epoch writes', async (ctx) => {
    // The lease lapses by itself, as a paused holder's does.
    const { table, pool } = await setup(ctx, 1_500);
    await db.query('CREATE TABLE fenced_writes (epoch int NOT NULL, at bigint NOT NULL)');
    await acquireOne(table, 'acme', 'a');
    const oldWriter = await pool.connect();
    try {
      await checkLease(oldWriter, { tenant: 'acme', holder: 'a', epoch: 1 }, 'BEGIN');
      // A renewal inside the write's lifetime makes a new version of the row: the write's lock
      // must carry over to it, or the takeover below would not see the write.
      expect((await table.renew('a', [{ tenant: 'acme', epoch: 1 }])).renewed).toHaveLength(1);
      await untilExpired('acme'); // the old holder paused past its lease, inside its transaction
      // Answered while the write is open (waiting for it would not answer before its COMMIT below).
      expect(await acquireOne(table, 'acme', 'b')).toBeUndefined();
      await oldWriter.query('INSERT INTO fenced_writes VALUES (1, 1)');
      await oldWriter.query('COMMIT');
      expect((await acquireOne(table, 'acme', 'b'))?.epoch).toBe(2);

      // From here only epoch 2 passes the fence.
      await expect(checkLease(oldWriter, { tenant: 'acme', holder: 'a', epoch: 1 }, 'BEGIN')).rejects.toThrow(
        LeaseLostError,
      );
      await oldWriter.query('ROLLBACK');
      const newWriter = await pool.connect();
      try {
        await checkLease(newWriter, { tenant: 'acme', holder: 'b', epoch: 2 }, 'BEGIN');
        await newWriter.query('INSERT INTO fenced_writes VALUES (2, 2)');
        await newWriter.query('COMMIT');
      } finally {
        newWriter.release();
      }
      const { rows } = await db.query<{ epoch: number }>('SELECT epoch FROM fenced_writes ORDER BY at');
      expect(rows.map((r) => r.epoch)).toEqual([1, 2]);
    } finally {
      oldWriter.release();
    }
  });

  it('a lease released by the round (not kept) while its write is open: a takeover still passes over the row until the write ends', async (ctx) => {
    // The round's release takes FOR NO KEY UPDATE, which the write's FOR KEY SHARE does not stop:
    // the row is free at once, and only the lock carried over to its new version keeps the takeover off.
    const { table, pool } = await setup(ctx, 30_000);
    await acquireOne(table, 'acme', 'a');
    const oldWriter = await pool.connect();
    try {
      await checkLease(oldWriter, { tenant: 'acme', holder: 'a', epoch: 1 }, 'BEGIN');
      expect(await table.releaseAllExcept('a', [])).toEqual({ released: ['acme'], passedOver: [] });
      expect(await table.acquireMany('b', [{ tenant: 'acme' }])).toEqual({ granted: [], passedOver: ['acme'] });
      await oldWriter.query('COMMIT');
    } finally {
      oldWriter.release();
    }
    expect((await acquireOne(table, 'acme', 'b'))?.epoch).toBe(2);
  });

  it('a fence check that lands inside the round’s release of its lease (not yet committed) still keeps a takeover off until the write ends', async (ctx) => {
    // The round's release changes the holder under FOR NO KEY UPDATE, which a fence's FOR KEY SHARE
    // does not wait for: the check passes on the old version, and its lock must reach the version
    // the release commits, or the takeover would write beside the old holder's open write.
    const { table, pool } = await setup(ctx, 30_000);
    await acquireOne(table, 'acme', 'a');
    const releaser = await pool.connect();
    const oldWriter = await pool.connect();
    try {
      await releaser.query('BEGIN');
      await releaser.query(
        `UPDATE changefeed_leases SET holder = NULL, expires_at = clock_timestamp(), released_at = clock_timestamp()
          WHERE tenant = 'acme' AND holder = 'a'`,
      );
      await checkLease(oldWriter, { tenant: 'acme', holder: 'a', epoch: 1 }, 'BEGIN');
      await releaser.query('COMMIT');
      expect(await table.acquireMany('b', [{ tenant: 'acme' }])).toEqual({ granted: [], passedOver: ['acme'] });
      await oldWriter.query('COMMIT');
    } finally {
      releaser.release();
      oldWriter.release();
    }
    expect((await acquireOne(table, 'acme', 'b'))?.epoch).toBe(2);
  });

  // Waited for (FOR UPDATE), one row another session holds timed the statement out and none of
  // the others was released: on a replica's stop every tenant then waited out its lease.
  it('a release of many leases, one row held locked by another session: the others are released', async (ctx) => {
    const { table, pool } = await setup(ctx, 3_000);
    for (const tenant of ['acme', 'globex', 'initech']) await acquireOne(table, tenant, 'a');
    const locker = await pool.connect();
    try {
      await locker.query('BEGIN');
      await locker.query("SELECT 1 FROM changefeed_leases WHERE tenant = 'acme' FOR UPDATE");
      const released = await table
        .releaseMany(
          'a',
          ['acme', 'globex', 'initech'].map((tenant) => ({ tenant, epoch: 1 })),
        )
        .catch((error: unknown) => error);
      await locker.query('COMMIT');
      expect(released).toEqual(['globex', 'initech']);
    } finally {
      locker.release();
    }
  });

  it('a release gives the lease up without waiting for its epoch’s open write, and a takeover passes over the row until the write ends', async (ctx) => {
    const { table, pool } = await setup(ctx, 30_000);
    await acquireOne(table, 'acme', 'a');
    const writer = await pool.connect();
    try {
      await checkLease(writer, { tenant: 'acme', holder: 'a', epoch: 1 }, 'BEGIN');
      // Answered while the write is open (waiting for it would not answer before its COMMIT below).
      expect(await table.release('acme', 'a', 1)).toBe(true);
      expect((await table.list())[0]).toMatchObject({ holder: undefined, epoch: 1 });
      expect(await acquireOne(table, 'acme', 'b')).toBeUndefined();
      await writer.query('COMMIT');
      expect((await acquireOne(table, 'acme', 'b'))?.epoch).toBe(2);
    } finally {
      writer.release();
    }
  });

  it('a writer paused inside its transaction cannot hold a takeover off forever once the session times out', async (ctx) => {
    const { table } = await setup(ctx, 1_500);
    // What the store's pool must set: PostgreSQL ends a transaction left idle this long, and
    // with it the lease row's lock, so the next holder is not stuck behind a stopped process.
    const writerPool = db.pool({ options: '-c idle_in_transaction_session_timeout=4000' });
    await acquireOne(table, 'acme', 'a');
    const writer = await writerPool.connect();
    const ended = new Promise((resolve) => writer.on('error', resolve));
    try {
      await checkLease(writer, { tenant: 'acme', holder: 'a', epoch: 1 }, 'BEGIN');
      // ...and the process stops here, its transaction open.
      await untilExpired('acme');
      expect(await acquireOne(table, 'acme', 'b')).toBeUndefined(); // passed over while the session lives
      expect(String(await ended)).toMatch(/idle-in-transaction timeout/);
      // The server sends that error before its backend aborts the transaction: wait, blocking on
      // the row's lock, until the lock went with it (a takeover skips a row still locked).
      await db.query("SELECT 1 FROM changefeed_leases WHERE tenant = 'acme' FOR UPDATE");
      expect((await acquireOne(table, 'acme', 'b'))?.epoch).toBe(2);
      await expect(writer.query('COMMIT')).rejects.toThrow();
    } finally {
      writer.release(true);
    }
  });

  it('refuses a tenant whose key another tenant’s valid lease polls, until that lease is released or expires', async (ctx) => {
    const { table } = await setup(ctx);
    const key = 'k1'.padEnd(64, '0');
    const a = await acquireOne(table, 'tenant-a', 'r1', key);
    expect(a?.epoch).toBe(1);
    // Never leased (fresh) and leased before (taken) alike are refused while tenant-a holds the key.
    expect(await acquireOne(table, 'tenant-b', 'r2', key)).toBeUndefined();
    expect(await acquireOne(table, 'tenant-c', 'r2', 'k2'.padEnd(64, '0'))).toBeDefined();
    await table.release('tenant-c', 'r2', 1);
    expect(await acquireOne(table, 'tenant-c', 'r2', key)).toBeUndefined();
    // The renewal keeps the key on the lease: still refused.
    expect((await table.renew('r1', [{ tenant: 'tenant-a', epoch: 1 }])).renewed).toHaveLength(1);
    expect(await acquireOne(table, 'tenant-b', 'r2', key)).toBeUndefined();
    // The holder of tenant-a itself re-acquires it after expiry: its own key does not block it.
    await expire('tenant-a');
    expect((await acquireOne(table, 'tenant-a', 'r1', key))?.epoch).toBe(2);
    await table.release('tenant-a', 'r1', 2);
    expect((await acquireOne(table, 'tenant-b', 'r2', key))?.epoch).toBe(1);
    await expire('tenant-b');
    expect((await acquireOne(table, 'tenant-c', 'r1', key))?.epoch).toBe(2);
  });

  it('ten tenants of one key acquired at once by ten replicas: exactly one is granted', async (ctx) => {
    const { table } = await setup(ctx);
    const key = 'k1'.padEnd(64, '0');
    const granted = await Promise.all(
      Array.from({ length: 10 }, (_, i) => acquireOne(table, `tenant-${i}`, `r${i}`, key)),
    );
    expect(granted.filter((g) => g !== undefined)).toHaveLength(1);
  });

  it('acquires a round’s tenants in one statement: new, released and expired rows, never a valid lease or a key held twice', async (ctx) => {
    const { table } = await setup(ctx, 30_000);
    const key = 'k2'.padEnd(64, '0');
    await acquireOne(table, 'held', 'b');
    await acquireOne(table, 'released', 'b');
    await table.release('released', 'b', 1);
    await acquireOne(table, 'expired', 'b');
    await expire('expired');
    const { granted } = await table.acquireMany('a', [
      { tenant: 'new' },
      { tenant: 'held' },
      { tenant: 'released' },
      { tenant: 'expired' },
      { tenant: 'key-1', keyFingerprint: key },
      { tenant: 'key-2', keyFingerprint: key },
    ]);
    expect(granted.map((g) => [g.tenant, g.epoch]).sort()).toEqual([
      ['expired', 2],
      ['key-1', 1],
      ['new', 1],
      ['released', 2],
    ]);
    const holders = new Map((await table.list()).map((r) => [r.tenant, r.holder]));
    expect(Object.fromEntries(holders)).toEqual({
      expired: 'a',
      held: 'b',
      'key-1': 'a',
      new: 'a',
      released: 'a',
    });
    // The key's second tenant is refused while the first's lease holds the key, also alone.
    expect((await table.acquireMany('a', [{ tenant: 'key-2', keyFingerprint: key }])).granted).toEqual([]);
  });

  it('refuses a renewal to a key another tenant’s valid lease holds, as an acquisition is refused', async (ctx) => {
    const { table } = await setup(ctx, 30_000);
    const [k1, k2] = ['k1'.padEnd(64, '0'), 'k2'.padEnd(64, '0')];
    expect((await table.acquireMany('a', [{ tenant: 'acme', keyFingerprint: k1 }])).granted).toHaveLength(1);
    expect((await table.acquireMany('b', [{ tenant: 'globex', keyFingerprint: k2 }])).granted).toHaveLength(1);
    const fingerprints = async (): Promise<Record<string, string | null>> => {
      const { rows } = await db.query<{ tenant: string; key_fingerprint: string | null }>(
        'SELECT tenant, key_fingerprint FROM changefeed_leases ORDER BY tenant',
      );
      return Object.fromEntries(rows.map((r) => [r.tenant, r.key_fingerprint]));
    };
    // acme's file took globex's key: renewing acme with it would poll one key for two tenants.
    expect(await table.renew('a', [{ tenant: 'acme', epoch: 1, keyFingerprint: k2 }])).toEqual({
      renewed: [],
      locked: [],
    });
    expect(await fingerprints()).toEqual({ acme: k1, globex: k2 });
    // Its own key, unchanged, renews as before; so does the new key once globex lets it go.
    expect(
      (await table.renew('a', [{ tenant: 'acme', epoch: 1, keyFingerprint: k1 }])).renewed.map((r) => r.tenant),
    ).toEqual(['acme']);
    await table.release('globex', 'b', 1);
    expect(
      (await table.renew('a', [{ tenant: 'acme', epoch: 1, keyFingerprint: k2 }])).renewed.map((r) => r.tenant),
    ).toEqual(['acme']);
    expect((await fingerprints()).acme).toBe(k2);
    // The key acme gave up is free: globex may take it.
    expect((await table.acquireMany('b', [{ tenant: 'globex', keyFingerprint: k1 }])).granted).toHaveLength(1);
  });

  it('renews one of two tenants whose files took one new key in the same round, as an acquisition would', async (ctx) => {
    const { table } = await setup(ctx, 30_000);
    const [k1, k2, k3] = ['k1'.padEnd(64, '0'), 'k2'.padEnd(64, '0'), 'k3'.padEnd(64, '0')];
    expect((await table.acquireMany('a', [{ tenant: 'acme', keyFingerprint: k1 }])).granted).toHaveLength(1);
    expect((await table.acquireMany('a', [{ tenant: 'globex', keyFingerprint: k2 }])).granted).toHaveLength(1);
    // Both in one statement, its one snapshot showed k3 free for each: both were renewed with it.
    const { renewed } = await table.renew('a', [
      { tenant: 'acme', epoch: 1, keyFingerprint: k3 },
      { tenant: 'globex', epoch: 1, keyFingerprint: k3 },
    ]);
    expect(renewed.map((r) => r.tenant)).toEqual(['acme']);
    const { rows } = await db.query<{ tenant: string; key_fingerprint: string }>(
      'SELECT tenant, key_fingerprint FROM changefeed_leases ORDER BY tenant',
    );
    expect(rows).toEqual([
      { tenant: 'acme', key_fingerprint: k3 },
      { tenant: 'globex', key_fingerprint: k2 },
    ]);
  });

  it('two replicas taking the same free tenants in opposite orders, one under an old write: both answer at once', async (ctx) => {
    // Each replica asks for its round's tenants in its own rendezvous order. Waiting on the old
    // holder's write open on the middle tenant, each would come to hold a row the other waits for.
    const { table, pool } = await setup(ctx, 30_000);
    for (const tenant of ['t1', 't2', 't3']) await acquireOne(table, tenant, 'old');
    const oldWriter = await pool.connect();
    try {
      await checkLease(oldWriter, { tenant: 't2', holder: 'old', epoch: 1 }, 'BEGIN');
      for (const tenant of ['t1', 't2', 't3']) await expire(tenant);
      const [x, y] = await Promise.all([
        table.acquireMany('x', [{ tenant: 't1' }, { tenant: 't2' }, { tenant: 't3' }]),
        table.acquireMany('y', [{ tenant: 't3' }, { tenant: 't2' }, { tenant: 't1' }]),
      ]);
      expect([...x.granted, ...y.granted].map((g) => g.tenant).sort()).toEqual(['t1', 't3']);
      await oldWriter.query('COMMIT');
      expect((await table.acquireMany('y', [{ tenant: 't2' }])).granted.map((g) => g.tenant)).toEqual(['t2']);
    } finally {
      oldWriter.release();
    }
  });

  it('lists when each holder stops counting as live, for the rounds to look again then', async (ctx) => {
    const { table } = await setup(ctx, 10_000);
    await table.heartbeat('b');
    await acquireOne(table, 't1', 'b');
    await db.query(
      "UPDATE changefeed_instances SET heartbeat_at = clock_timestamp() - interval '4 seconds' WHERE instance_id = 'b'",
    );
    const [row] = await table.list();
    // A lease of 10 s whose holder last heartbeat 4 s ago: live for about 6 s more, on the database's clock.
    expect(row!.holderLiveForMs).toBeGreaterThan(5_000);
    expect(row!.holderLiveForMs).toBeLessThanOrEqual(6_000);
    await table.release('t1', 'b', 1);
    await table.retireInstance('b');
    expect((await table.list())[0]!.holderLiveForMs).toBe(-Infinity);
  });

  it('lists rows whose expiry or heartbeat was set by hand to -infinity or infinity', async (ctx) => {
    const { table } = await setup(ctx, 10_000);
    await table.heartbeat('b');
    await acquireOne(table, 't1', 'b');
    await acquireOne(table, 't2', 'b');
    await db.query("UPDATE changefeed_leases SET expires_at = '-infinity' WHERE tenant = 't1'");
    await db.query("UPDATE changefeed_leases SET expires_at = 'infinity' WHERE tenant = 't2'");
    await db.query("UPDATE changefeed_instances SET heartbeat_at = 'infinity' WHERE instance_id = 'b'");
    const rows = await table.list();
    expect(rows.map((r) => [r.tenant, r.expiresInMs, r.holderLiveForMs])).toEqual([
      ['t1', -Infinity, Infinity],
      ['t2', Infinity, Infinity],
    ]);
  });

  it('has `tenant` as its only key column, so a renewal takes no lock that a fenced write blocks', async (ctx) => {
    await setup(ctx);
    // PostgreSQL's key columns are those of unique indexes a foreign key could use.
    const { rows } = await db.query<{ columns: string[] }>(
      `SELECT array_agg(a.attname::text ORDER BY a.attname) AS columns
         FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
        WHERE i.indrelid = 'changefeed_leases'::regclass AND i.indisunique
        GROUP BY i.indexrelid`,
    );
    expect(rows.map((r) => r.columns)).toEqual([['tenant']]);
  });

  it('lists live holders, forgets unconfigured free tenants and releases what the holder does not keep', async (ctx) => {
    const { table } = await setup(ctx);
    await table.heartbeat('a');
    await table.heartbeat('b');
    expect(await table.liveInstances()).toEqual(['a', 'b']);
    for (const tenant of ['t1', 't2', 't3']) await acquireOne(table, tenant, 'a');
    await acquireOne(table, 't4', 'b');
    expect((await table.releaseAllExcept('a', ['t1'])).released).toEqual(['t2', 't3']);
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
