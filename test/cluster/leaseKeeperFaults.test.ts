import type pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { databaseFence, LeaseLostError, type WriteFence } from '../../src/cluster/writeFence.js';
import { connectLeaseAdmin, createLeaseSchema, type LeaseSchema } from '../support/leaseDatabase.js';
import { KeeperSet, PausableClock, type TestKeeper } from '../support/leaseKeepers.js';
import { POSTGRES_PORT } from '../support/postgresAdmin.js';
import { LEASE_CONNECTIONS } from '../../src/store/postgres/postgresStoreBackend.js';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy.js';

let admin: pg.Client | undefined;
let db: LeaseSchema | undefined;
let set: KeeperSet | undefined;
let proxy: TcpProxy | undefined;

beforeAll(async () => {
  admin = await connectLeaseAdmin('lease keeper fault tests');
});
afterEach(async () => {
  const violations = set?.violations ?? [];
  await set?.stopAll();
  await proxy?.close();
  await db?.close();
  set = db = proxy = undefined;
  expect(violations).toEqual([]);
});
afterAll(async () => {
  await admin?.end();
});

const TENANTS = ['acme', 'globex', 'initech', 'hooli', 'umbrella', 'stark'];

async function setup(ctx: { skip: (note?: string) => void }): Promise<{ db: LeaseSchema; set: KeeperSet }> {
  if (!admin) ctx.skip('no PostgreSQL');
  db = await createLeaseSchema(admin!);
  set = new KeeperSet(() => {
    for (const tenant of TENANTS) {
      const writers = set!.keepers.filter((k) => k.keeper.canWrite(tenant)).map((k) => k.id);
      expect(writers.length, `${tenant} writable at ${writers.join(', ')}`).toBeLessThanOrEqual(1);
    }
  });
  return { db, set };
}

/** A transaction of `pool` opened by `fence`'s check, as a store's; rolled back if the check throws. */
async function fencedWrite(pool: pg.Pool, fence: WriteFence): Promise<unknown> {
  const client = await pool.connect();
  try {
    await fence.check(client, 'BEGIN');
    await client.query('COMMIT');
    return 'written';
  } catch (error) {
    await client.query('ROLLBACK');
    return error;
  } finally {
    client.release();
  }
}

const held = (k: TestKeeper): number => k.keeper.heldLeases().length;

describe('LeaseKeeper under faults', () => {
  it('a keeper paused past its lease (SIGSTOP) loses its tenants to another, then its fence refuses', async (ctx) => {
    const { db, set } = await setup(ctx);
    const pool = db.pool();
    const clock = new PausableClock();
    const a = set.add('a', db.pool(), () => TENANTS, { clock, leaseMs: 3_000 });
    a.start();
    await set.until('a holds all 6', () => held(a) === 6);
    const fences = TENANTS.map((tenant) => a.keeper.fence(tenant));
    expect(await fencedWrite(pool, fences[0]!)).toBe('written');

    clock.pause(); // neither its renewals nor its deadline timer run from here
    const b = set.add('b', db.pool(), () => TENANTS, { clock: systemClock, leaseMs: 3_000 });
    b.start();
    await set.until('b took all 6 once a’s leases expired', () => held(b) === 6);
    expect(a.count('lost')).toBe(0); // a has not run since: it does not know yet

    // Resumed, a's first write attempts are refused: locally (its deadline passed) and, were
    // that check skipped, by the database (b holds the tenants at a newer epoch).
    for (const fence of fences) {
      const refused = await fencedWrite(pool, fence);
      expect(refused).toBeInstanceOf(LeaseLostError);
      expect(await fencedWrite(pool, databaseFence(fence.inline!.claim, 3_000))).toMatchObject({
        code: 'LEASE_LOST',
      });
    }
    clock.resume();
    await set.until('a reported all 6 lost', () => a.count('lost') === 6);
    // It rejoins as a live replica and gets its share handed over by b.
    await set.until('3 each', () => held(a) === 3 && held(b) === 3);
    // 3 unless a loaded machine made a lease lapse on the way (safe, but another epoch).
    for (const lease of a.keeper.heldLeases()) expect(lease.epoch).toBeGreaterThanOrEqual(3);
  });

  it('database gone silent: the keeper stops writing before the lease may expire, reports it, and recovers', async (ctx) => {
    const { db, set } = await setup(ctx);
    proxy = await startTcpProxy(POSTGRES_PORT);
    const a = set.add('a', db.pool({ port: proxy.port }), () => TENANTS, { queryTimeoutMs: 1_000 });
    a.start();
    await set.tickUntil('a holds all 6', () => held(a) === 6);
    expect(a.keeper.problem).toBeUndefined();

    proxy.freeze(); // a network partition: packets vanish, nothing is refused
    const failed = a.nextRound();
    await a.clock!.advance(a.renewEveryMs);
    expect(await failed).toMatchObject({ ok: false });
    expect(a.keeper.problem).toMatch(/tenant leases not renewed .*PostgreSQL store is reachable. Holding 6 tenants/);
    expect(TENANTS.every((t) => a.keeper.canWrite(t))).toBe(true); // not yet at risk

    // At the local deadline every tenant is lost, while the database still counts the leases valid.
    const deadline = a.keeper.validUntil('acme')!;
    await a.clock!.advanceTo(deadline);
    expect(a.events.filter((e) => e.type === 'lost').map((e) => e.tenant)).toEqual(expect.arrayContaining(TENANTS));
    expect(TENANTS.some((t) => a.keeper.canWrite(t))).toBe(false);
    const { rows } = await db.query<{ valid: boolean }>(
      'SELECT bool_and(holder = $1 AND expires_at > clock_timestamp()) AS valid FROM changefeed_leases',
      ['a'],
    );
    expect(rows[0]!.valid).toBe(true);

    // Down (connections refused), then back: the next rounds succeed and the tenants come back at new epochs.
    await proxy.stop();
    proxy.thaw();
    const refused = a.nextRound();
    await a.clock!.advance(a.renewEveryMs);
    expect(await refused).toMatchObject({ ok: false });
    await proxy.start();
    await set.tickUntil('all 6 back', () => held(a) === 6 && a.keeper.problem === undefined);
    for (const lease of a.keeper.heldLeases()) expect(lease.epoch).toBe(2);
  });

  it('database down at start: nothing is taken, the problem is reported, and the tenants are taken when it comes', async (ctx) => {
    const { db, set } = await setup(ctx);
    proxy = await startTcpProxy(POSTGRES_PORT);
    await proxy.stop();
    const a = set.add('a', db.pool({ port: proxy.port }), () => TENANTS, { queryTimeoutMs: 1_000 });
    const first = a.nextRound();
    a.start();
    expect(await first).toMatchObject({ ok: false });
    expect(a.keeper.problem).toMatch(/tenant leases not renewed for \d+ s \(1 failed rounds in a row\)/);
    expect(held(a)).toBe(0);
    await proxy.start();
    await set.tickUntil('all 6 taken', () => held(a) === 6);
    expect(a.keeper.problem).toBeUndefined();
  });

  it('the row of a tenant no longer configured, locked by another session: the round forgets it later instead of failing', async (ctx) => {
    // The round forgets free rows of unconfigured tenants (a DELETE, which waits for any row lock):
    // one such row held locked (an operator's session, the removed tenant's last write still open)
    // failed every round for as long as it stayed locked.
    const { db, set } = await setup(ctx);
    const a = set.add('a', db.pool(), () => TENANTS, { leaseMs: 3_000 });
    a.start();
    await set.tickUntil('a holds all 6', () => held(a) === 6);
    await db.query("INSERT INTO changefeed_leases (tenant, epoch, expires_at) VALUES ('gone', 1, clock_timestamp())");
    const locker = db.pool({ max: 1 });
    const session = await locker.connect();
    try {
      await session.query('BEGIN');
      await session.query("SELECT 1 FROM changefeed_leases WHERE tenant = 'gone' FOR UPDATE");
      for (let i = 0; i < 2; i++) {
        const round = a.nextRound();
        await a.clock!.advanceTo(a.clock!.nextWakeAt()!);
        const outcome = await round;
        expect(outcome, String((outcome as { error?: unknown }).error)).toMatchObject({ ok: true });
      }
      await session.query('COMMIT');
    } finally {
      session.release();
      await locker.end();
    }
    await set.tick();
    expect((await db.query("SELECT 1 FROM changefeed_leases WHERE tenant = 'gone'")).rowCount).toBe(0);
    expect(held(a)).toBe(6);
  });

  it('one lease row locked by another session: the others are renewed, that one alone is lost at its local deadline', async (ctx) => {
    // An operator's `SELECT ... FOR UPDATE`, or a replica paused inside a change of holder: the
    // renewal used to wait for that row, time out, and leave every tenant of the replica to its
    // local deadline.
    const { db, set } = await setup(ctx);
    const a = set.add('a', db.pool(), () => TENANTS, { leaseMs: 3_000 });
    a.start();
    await set.tickUntil('a holds all 6', () => held(a) === 6);
    const locker = db.pool({ max: 1 });
    const session = await locker.connect();
    try {
      await session.query('BEGIN');
      await session.query("SELECT 1 FROM changefeed_leases WHERE tenant = 'acme' FOR UPDATE");
      const deadline = a.keeper.validUntil('acme')!;
      // Each round runs at the clock of its own wake-up (the earliest timer: the local deadline
      // falls on a round's), so its renewal answers before a later timer fires.
      const unanswered: number[] = [];
      while (a.count('lost') === 0) {
        const round = a.nextRound();
        await a.clock!.advanceTo(a.clock!.nextWakeAt()!);
        const outcome = await round;
        expect(outcome).toMatchObject({ ok: true });
        unanswered.push(outcome.type === 'round' ? (outcome.lockedRows?.renew ?? -1) : -1);
        expect(unanswered.length).toBeLessThanOrEqual(4);
      }
      expect(unanswered[0]).toBe(1);
      expect(a.clock!.now()).toBeGreaterThanOrEqual(deadline);
      expect(a.events.filter((e) => e.type === 'lost')).toEqual([
        { type: 'lost', tenant: 'acme', reason: expect.stringMatching(/local deadline/) },
      ]);
      expect(TENANTS.filter((t) => a.keeper.canWrite(t))).toEqual(TENANTS.filter((t) => t !== 'acme'));
      // Rounds go on while the row stays locked, and say each time that they passed over it (the
      // renewal has nothing left to ask), so the lock stays visible for as long as it lasts: first
      // the round's release of the lease it no longer keeps, still valid in the database...
      for (let i = 0; i < 2; i++) {
        const round = a.nextRound();
        await a.clock!.advanceTo(a.clock!.nextWakeAt()!);
        expect(await round).toMatchObject({ ok: true, lockedRows: { renew: 0, release: 1, acquire: 0 } });
      }
      // ...then, once the lease has run out on the database's clock too, its acquisition.
      await db.query(
        `SELECT pg_sleep(greatest(0, extract(epoch FROM expires_at - clock_timestamp())) + 0.02)
           FROM changefeed_leases WHERE tenant = 'acme'`,
      );
      for (let i = 0; i < 2; i++) {
        const round = a.nextRound();
        await a.clock!.advanceTo(a.clock!.nextWakeAt()!);
        expect(await round).toMatchObject({ ok: true, lockedRows: { renew: 0, release: 0, acquire: 1 } });
      }
      await session.query('COMMIT');
    } finally {
      session.release();
      await locker.end();
    }
    // Let go, the row is released by the round that no longer knows it holds it, and taken again.
    await set.tickUntil('acme back', () => a.keeper.canWrite('acme'));
    expect(a.keeper.heldLeases().find((l) => l.tenant === 'acme')?.epoch).toBe(2);
  });

  it('renews while the releases of tenants given up meet their fenced writes still open', async (ctx) => {
    // A failed start gives its lease back. Released one statement each, hundreds at once (5,000
    // tenants starting) held both connections of the lease pool, each waiting FOR UPDATE behind
    // the tenant's fenced write under way, and the round's renewal waited behind them until every
    // lease had passed its local deadline (docs/scaling.md). A release no longer waits for the
    // writes (FOR NO KEY UPDATE does not conflict with them).
    const { db, set } = await setup(ctx);
    const a = set.add('a', db.pool({ max: LEASE_CONNECTIONS }), () => TENANTS, { leaseMs: 3_000 });
    a.start();
    await set.tickUntil('a holds all 6', () => held(a) === 6);
    const writers = db.pool({ max: 5 });
    const given = TENANTS.slice(0, 5);
    const open = await Promise.all(
      given.map(async (tenant) => {
        const client = await writers.connect();
        await a.keeper.fence(tenant).check(client, 'BEGIN');
        return client;
      }),
    );
    try {
      const releases = given.map((tenant) => a.keeper.release(tenant));
      const round = a.nextRound();
      await a.clock!.advance(a.renewEveryMs);
      const ended = await Promise.race([
        round,
        new Promise((resolve) => setTimeout(() => resolve('the round did not end within 5 s'), 5_000)),
      ]);
      expect(ended, String((ended as { error?: unknown }).error)).toMatchObject({ ok: true });
      expect(a.keeper.heldLeases().map((l) => l.tenant)).toEqual(['stark']);
      for (const client of open) await client.query('COMMIT');
      await Promise.all(releases);
      const rows = await a.table.list();
      expect(rows.filter((r) => r.holder === 'a').map((r) => r.tenant)).toEqual(['stark']);
    } finally {
      for (const client of open) client.release();
      await writers.end();
    }
  });
});
