import { describe, expect, it } from 'vitest';
import { LeaseTable } from '../../src/cluster/leaseTable.js';
import { databaseFence, type WriteFence } from '../../src/cluster/writeFence.js';
import { PRUNE_BATCH_EVENTS } from '../../src/store/storeRecords.js';
import { admin, openBackend } from './postgresTestDb.js';
import { acquireOne } from '../support/acquireOne.js';

const LEASE_MS = 30_000;
const TENANTS = ['acme', 'globex', 'initech'];

describe.skipIf(!admin)('the journal prune on PostgreSQL', () => {
  it('deletes in fenced transactions of at most a batch, under the fence’s statement timeout, and never holds up a renewal', async () => {
    const backend = await openBackend();
    const table = new LeaseTable(backend.leasePool, { leaseMs: LEASE_MS });
    for (const tenant of TENANTS) await acquireOne(table, tenant, 'a');
    const held = TENANTS.map((tenant) => ({ tenant, epoch: 1 }));
    const count = Math.floor(PRUNE_BATCH_EVENTS * 2.5);
    await backend.pool.query(
      `INSERT INTO events (tenant, event_id, log, object_id, type, performed_at, ingested_at, payload)
       SELECT 'acme', 'e-' || i, 'career', 'c-1', 'com.test.x', 0, 0, '{}' FROM generate_series(1, $1) AS i`,
      [count],
    );

    // What each transaction of the prune sees once its fence passed: the events still there, the
    // statement timeout in force, and whether a renewal of every lease finishes meanwhile.
    const seen: { left: number; statementTimeoutMs: number; renewed: number }[] = [];
    const fence = databaseFence({ tenant: 'acme', holder: 'a', epoch: 1 }, LEASE_MS);
    const observing: WriteFence = {
      ...fence,
      check: async (client, begin) => {
        await fence.check(client, begin); // the transaction now holds the lease row's lock
        const { rows } = await client.query<{ left: number; timeout: string }>(
          `SELECT (SELECT count(*) FROM events WHERE tenant = 'acme')::int AS left,
                  (SELECT setting FROM pg_settings WHERE name = 'statement_timeout') AS timeout`,
        );
        const { renewed } = await table.renew('a', held);
        seen.push({ left: rows[0]!.left, statementTimeoutMs: Number(rows[0]!.timeout), renewed: renewed.length });
      },
    };
    const store = await backend.tenantStore('acme', { fence: observing });

    expect(await store.outbox.prune(1)).toBe(count);
    const timeoutMs = LEASE_MS / 6; // 5 s: fenced statements end well before a third of the lease
    expect(seen).toEqual([
      { left: count, statementTimeoutMs: timeoutMs, renewed: 3 },
      { left: count - PRUNE_BATCH_EVENTS, statementTimeoutMs: timeoutMs, renewed: 3 },
      { left: count - 2 * PRUNE_BATCH_EVENTS, statementTimeoutMs: timeoutMs, renewed: 3 },
    ]);
    expect(await store.journalSize()).toBe(0);
  });
});
