import { ChangefeedError } from '../errors.js';
import type { ChangefeedStore } from '../store/changefeedStore.js';
import { openStoreBackend } from '../store/openStoreBackend.js';
import { StateDirLock } from '../store/stateDirLock.js';
import type { StoreBackend } from '../store/storeBackend.js';
import type { StoreConfig } from '../store/storeConfig.js';
import { storeLocation } from '../store/storeLocation.js';
import { DEFAULT_TENANT } from '../tenants/tenant.js';
import { takeCommandLease } from './commandLease.js';

/** How a command holds the tenant's lease on a shared store (`takeCommandLease`). */
export interface StoreLeaseOptions {
  /** Names the holder in the lease table (`tenants list` shows it). */
  command: string;
  leaseMs: number;
}

/**
 * Runs `use` with the store of one tenant, which a daemon must have created (a missing one is
 * STORE_MISSING, not a new empty store). `readonly` opens it beside a running daemon without
 * taking part in its writes. With `lease`, the command is the tenant's one deliverer while `use`
 * runs: on PostgreSQL it holds the tenant's lease and its writes are fenced by it (`lost` settles
 * if it runs out); on SQLite it holds the state directory's lock. `use` also gets the engine, for
 * what is not a tenant's (tenantHolder.ts). Store and engine are closed afterwards, whatever `use` does.
 */
export async function withExistingStore<T>(
  config: { stateDir: string; store: StoreConfig },
  options: { readonly?: boolean; tenant?: string | undefined; lease?: StoreLeaseOptions },
  use: (store: ChangefeedStore, lease: { lost: Promise<string> } | undefined, backend: StoreBackend) => Promise<T>,
): Promise<T> {
  const tenant = options.tenant ?? DEFAULT_TENANT;
  // Taken before opening.
  const lock =
    options.lease && storeLocation(config).kind === 'sqlite'
      ? takeCommandStateDirLock(config.stateDir, options.lease.command)
      : undefined;
  const backend = await openStoreBackend(config, { readonly: options.readonly ?? false, mustExist: true }).catch(
    (error: unknown) => {
      lock?.release();
      throw error;
    },
  );
  try {
    const shared = backend.sharedByReplicas;
    if (!options.lease || !shared) return await use(await backend.tenantStore(tenant), undefined, backend);
    const lease = await takeCommandLease(shared, tenant, options.lease);
    try {
      return await use(await backend.tenantStore(tenant, { fence: lease.fence }), lease, backend);
    } finally {
      await lease.release();
    }
  } finally {
    await backend.close();
    lock?.release();
  }
}

/**
 * The state directory's lock, which the daemon holds for its whole life, taken for the command's
 * run: delivering beside the daemon would send the outbox's rows twice and out of order. A daemon
 * started meanwhile is refused in turn until the command ends.
 */
function takeCommandStateDirLock(stateDir: string, command: string): StateDirLock {
  try {
    return StateDirLock.acquire(stateDir);
  } catch (error) {
    if (!(error instanceof ChangefeedError) || error.code !== 'STATE_DIR_LOCKED') throw error;
    throw new ChangefeedError(
      'STATE_DIR_LOCKED',
      `a changefeed daemon runs on state directory ${stateDir} and delivers its outbox; ` +
        `queue for it with ${command} --queue-only instead, or stop the daemon first`,
      { cause: error },
    );
  }
}
