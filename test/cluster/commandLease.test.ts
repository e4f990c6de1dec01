import { randomInt } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { takeCommandLease } from '../../src/cli/commandLease.js';
import { LeaseTable } from '../../src/cluster/leaseTable.js';
import { errorCodeOf } from '../../src/errors.js';
import { admin, openBackend, prepare, waiterBehind } from '../store/postgresTestDb.js';
import { acquireOne } from '../support/acquireOne.js';

describe.skipIf(!admin)("a command holding a tenant's lease (replay)", () => {
  it('keeps replicas off the tenant while it runs and hands the tenant back at once when done', async () => {
    const backend = await openBackend();
    const replicas = new LeaseTable(backend.leasePool, { leaseMs: 10_000 });
    const lease = await takeCommandLease(backend, 'acme', { leaseMs: 10_000, command: 'replay' });
    expect(await acquireOne(replicas, 'acme', 'replica-1')).toBeUndefined();
    expect((await replicas.list())[0]?.holder).toMatch(/^replay@/);
    await lease.release();
    expect(await acquireOne(replicas, 'acme', 'replica-1')).toBeDefined();
  });

  it('is refused with LEASE_HELD naming the replica that holds the tenant', async () => {
    const backend = await openBackend();
    await acquireOne(new LeaseTable(backend.leasePool, { leaseMs: 10_000 }), 'acme', 'replica-1');
    const refused = await takeCommandLease(backend, 'acme', { leaseMs: 10_000, command: 'replay' }).catch(
      (error: unknown) => error as Error,
    );
    expect(errorCodeOf(refused)).toBe('LEASE_HELD');
    expect((refused as Error).message).toContain('tenant "acme" is leased by replica-1');
  });

  it('a free tenant whose lease row another transaction holds locked is refused as locked, not as leased by its old holder', async () => {
    // The old holder's lease ran out while its last write is still open (or an operator's session
    // holds the row): the acquisition passes over the row; the replica named is no holder.
    const backend = await openBackend();
    await acquireOne(new LeaseTable(backend.leasePool, { leaseMs: 10_000 }), 'acme', 'replica-1');
    await backend.pool.query("UPDATE changefeed_leases SET expires_at = clock_timestamp() - interval '1 ms'");
    const session = await backend.pool.connect();
    try {
      await session.query('BEGIN');
      await session.query("SELECT 1 FROM changefeed_leases WHERE tenant = 'acme' FOR KEY SHARE");
      const refused = await takeCommandLease(backend, 'acme', { leaseMs: 10_000, command: 'replay' }).catch(
        (error: unknown) => error as Error,
      );
      expect(errorCodeOf(refused)).toBe('LEASE_HELD');
      expect((refused as Error).message).not.toContain('leased by replica-1');
      expect((refused as Error).message).toContain('lease row is locked by another transaction');
      await session.query('COMMIT');
    } finally {
      session.release();
    }
    const lease = await takeCommandLease(backend, 'acme', { leaseMs: 10_000, command: 'replay' });
    await lease.release();
  });

  it('reports the lease lost once a replica took the tenant over, and its writes are refused', async () => {
    const backend = await openBackend();
    const lease = await takeCommandLease(backend, 'acme', { leaseMs: 3_000, command: 'replay' });
    try {
      const store = await backend.tenantStore('acme', { fence: lease.fence });
      await prepare(store);
      // As if the command had paused past its lease: it expires and a replica takes the tenant.
      await backend.pool.query("UPDATE changefeed_leases SET expires_at = clock_timestamp() - interval '1 ms'");
      expect(
        await acquireOne(new LeaseTable(backend.leasePool, { leaseMs: 10_000 }), 'acme', 'replica-1'),
      ).toBeDefined();
      expect(await lease.lost).toContain('expired before it was renewed');
      const write = await store.setMeta('k', 'v').catch((error: unknown) => error);
      expect(errorCodeOf(write)).toBe('LEASE_LOST');
    } finally {
      await lease.release();
    }
  });
  it('a release met by its own renewal still under way gives the tenant back, not after the renewed lease', async () => {
    // The release passes over a row another transaction holds (SKIP LOCKED): sent while the
    // command's own renewal held the row, it gave nothing up and nothing released the lease later,
    // so replicas stayed off the tenant for the whole renewed lease.
    const backend = await openBackend();
    const gate = randomInt(1, 2 ** 31);
    // Holds every renewal's UPDATE (holder and epoch unchanged) on the advisory lock `gate`.
    await backend.pool.query(`CREATE FUNCTION gate_renewal() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.holder IS NOT DISTINCT FROM OLD.holder AND NEW.epoch = OLD.epoch THEN
          PERFORM pg_advisory_xact_lock(${gate});
        END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER gate_renewal BEFORE UPDATE ON changefeed_leases FOR EACH ROW EXECUTE FUNCTION gate_renewal()`);
    // The lease pool's two sessions, to see the release statement end in pg_stat_activity.
    const sessions = await Promise.all([backend.leasePool.connect(), backend.leasePool.connect()]);
    const pids = await Promise.all(
      sessions.map(async (s) => (await s.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid),
    );
    for (const s of sessions) s.release();
    const gatekeeper = await backend.pool.connect();
    try {
      await gatekeeper.query(`SELECT pg_advisory_lock(${gate})`);
      const lease = await takeCommandLease(backend, 'acme', { leaseMs: 3_000, command: 'replay' });
      await waiterBehind(gatekeeper); // the renewal, inside its statement, holding the row
      let settled = false;
      const released = lease.release().finally(() => (settled = true));
      // The renewal goes on only once the release's statement has met its row.
      for (;;) {
        const { rows } = await admin!.query(
          `SELECT 1 FROM pg_stat_activity WHERE pid = ANY($1::int[]) AND state = 'idle' AND query LIKE 'WITH locked AS%'`,
          [pids],
        );
        if (rows.length > 0 || settled) break;
      }
      await gatekeeper.query(`SELECT pg_advisory_unlock(${gate})`);
      await released;
    } finally {
      gatekeeper.release();
    }
    const replicas = new LeaseTable(backend.leasePool, { leaseMs: 10_000 });
    expect((await replicas.list())[0]?.holder).toBeUndefined();
    expect(await acquireOne(replicas, 'acme', 'replica-1')).toBeDefined();
  });
});
