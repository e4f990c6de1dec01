import { LeaseTable } from '../cluster/leaseTable.js';
import type { StoreBackend } from '../store/storeBackend.js';

/** Who runs a tenant, as the store says: on SQLite the one daemon; on PostgreSQL the lease holder. */
export type TenantHolder =
  | { kind: 'local' }
  | {
      kind: 'held';
      holder: string;
      live: boolean;
      /** Its feed listener (cluster.advertiseUrl). */
      url: string | undefined;
      /** Its health server (cluster.advertiseHealthUrl), where /readyz is. */
      healthUrl: string | undefined;
    }
  | { kind: 'unheld' };

/**
 * Finds the replica holding `tenant` through the store's lease table (docs/scaling.md), so a
 * command run anywhere asks the replica that runs the tenant rather than its own host's port.
 * On SQLite the daemon on this host's state directory is the only one there is.
 */
export async function findTenantHolder(backend: StoreBackend, tenant: string, leaseMs: number): Promise<TenantHolder> {
  const shared = backend.sharedByReplicas;
  if (!shared) return { kind: 'local' };
  const row = (await new LeaseTable(shared.leasePool, { leaseMs }).list()).find((r) => r.tenant === tenant);
  if (row?.holder === undefined || !(row.expiresInMs > 0)) return { kind: 'unheld' };
  return { kind: 'held', holder: row.holder, live: row.holderLive, url: row.holderUrl, healthUrl: row.holderHealthUrl };
}
