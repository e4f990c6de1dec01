import { describe, expect, it } from 'vitest';
import { LeaseTable } from '../../src/cluster/leaseTable.js';
import { LEASE_CONNECTIONS } from '../../src/store/postgres/postgresStoreBackend.js';
import { admin, openBackend } from './postgresTestDb.js';
import { acquireOne } from '../support/acquireOne.js';

describe.skipIf(!admin)('PostgreSQL store: the leases have connections of their own', () => {
  it('renews a lease while every connection of the tenants pool is busy', async () => {
    const backend = await openBackend();
    const leases = new LeaseTable(backend.leasePool, { leaseMs: 15_000 });
    const granted = await acquireOne(leases, 'acme', 'replica-a');
    expect(granted).toBeDefined();
    // Hold every connection of the tenants' pool (store.maxConnections, 10 by default).
    const held = await Promise.all(Array.from({ length: backend.pool.options.max }, () => backend.pool.connect()));
    try {
      const started = Date.now();
      const { renewed } = await leases.renew('replica-a', [{ tenant: 'acme', epoch: granted!.epoch }]);
      expect(renewed.map((r) => r.tenant)).toEqual(['acme']);
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      for (const client of held) client.release();
    }
    expect(backend.leasePool.options.max).toBe(LEASE_CONNECTIONS);
  });
});
