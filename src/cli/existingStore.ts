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
 * Runs `use` with the store of one tenant, which a daemon must have created: on SQLite a missing
 * file is STORE_MISSING (exit 1) naming the path and the stateDir, rather than a new empty store.
 * `readonly` opens it beside a running daemon without taking part in its writes. With `lease`, on
 * a PostgreSQL store, the command holds the tenant's lease while `use` runs and its writes are
 * fenced by it; `lost` then settles if the lease runs out. On SQLite it holds the state
 * directory's lock instead, which a running daemon refuses it (STATE_DIR_LOCKED). `use` also
 * gets the engine, to read what is not a tenant's (who holds it: tenantHolder.ts). The store and
 * its engine are closed afterwards, whatever `use` does.
 */
export async function withExistingStore<T>(
  config: { stateDir: string; store: StoreConfig },
  options: { readonly?: boolean; tenant?: string | undefined; lease?: StoreLeaseOptions },
  use: (store: ChangefeedStore, lease: { lost: Promise<string> } | undefined, backend: StoreBackend) => Promise<T>,
): Promise<T> {
  const tenant = options.tenant ?? DEFAULT_TENANT;
  // On SQLite the daemon's state directory lock plays the lease's part, taken before opening.
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
 * Makes a command the one deliverer of a SQLite store, as the daemon is while it runs: the
 * state directory's lock, which the daemon holds for its whole life, taken for the command's run.
 * Delivering beside the daemon would send the outbox's rows twice and out of order, as on
 * PostgreSQL without the tenant's lease (commandLease.ts). Refused with STATE_DIR_LOCKED, saying
 * what to do, while a daemon holds it; a daemon started meanwhile is refused in turn until the
 * command ends.
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
