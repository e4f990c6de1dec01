import type { LeaseTable } from '../cluster/leaseTable.js';
import type { TenantConfig } from '../config/tenantConfigSchema.js';
import type { ConsoleSource, TenantPlacement } from '../console/consoleSource.js';
import type { StoreBackend } from '../store/storeBackend.js';
import type { Tenant } from '../tenants/tenant.js';
import type { TenantSupervisor } from './tenantSupervisor.js';

export interface DaemonConsoleParts {
  tenants: () => readonly Tenant<TenantConfig>[];
  supervisor: () => TenantSupervisor | undefined;
  backend: () => StoreBackend | undefined;
  /** On a store shared by replicas: the lease table, which says who holds each tenant. */
  leaseTable: () => LeaseTable | undefined;
  instanceId: string;
}

/**
 * The daemon as the operator console reads it: the tenants of its config, where each runs (this
 * process, or on a shared store the holder of its lease) and each tenant's store, opened the way
 * the commands open it, without a fence: the console's writes are the commands' (re-queue a dead
 * letter, queue a replay), which are safe beside the holder.
 */
export function daemonConsoleSource(parts: DaemonConsoleParts): ConsoleSource {
  return {
    tenants: () =>
      parts.tenants().map((t) => ({
        name: t.name,
        keyFingerprint: t.keyFingerprint,
        sinks: t.config.sinks.map((s) => ({ name: s.name, type: s.type })),
      })),
    placement: async (tenant): Promise<TenantPlacement> => {
      const supervisor = parts.supervisor();
      if (supervisor?.runtime(tenant)) return { kind: 'here' };
      const table = parts.leaseTable();
      if (table) {
        const row = (await table.list()).find((r) => r.tenant === tenant);
        if (row?.holder !== undefined && row.expiresInMs > 0)
          return row.holder === parts.instanceId
            ? { kind: 'idle' }
            : { kind: 'held', holder: row.holder, live: row.holderLive };
      }
      const failure = supervisor?.startFailures.get(tenant);
      return failure === undefined ? { kind: 'idle' } : { kind: 'failed', error: failure };
    },
    store: async (tenant) => {
      const backend = parts.backend();
      return backend ? backend.tenantStore(tenant) : undefined;
    },
  };
}
