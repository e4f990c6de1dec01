import { ChangefeedError } from '../errors.js';
import type { ChangefeedStore } from '../store/changefeedStore.js';
import { openStoreBackend } from '../store/openStoreBackend.js';
import { StateDirLock } from '../store/stateDirLock.js';
import type { StoreBackend } from '../store/storeBackend.js';
import type { StoreConfig } from '../store/storeConfig.js';
import { isStorageError, StoreUnavailableError } from '../store/storeHealth.js';
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
  } catch (error) {
    throw refusedByTheStore(error, backend.location);
  } finally {
    await backend.close();
    lock?.release();
  }
}

/**
 * A statement of the command that the store refused (a full or read-only disk, a file locked past
 * the busy timeout), as STORE_UNAVAILABLE naming the store and what to do: SQLite's own words
 * ("database or disk is full") named neither and came out as a stack trace. What the command
 * wrote before is kept, each write being whole; run again, it goes on from there.
 */
function refusedByTheStore(error: unknown, location: string): unknown {
  if (!isStorageError(error) || error instanceof ChangefeedError) return error;
  const code = (error as { code?: unknown }).code;
  const why = `${(error as Error).message}${typeof code === 'string' ? ` (${code})` : ''}`;
  const remedy =
    code === 'SQLITE_FULL' || code === 'ENOSPC'
      ? 'free space on its disk'
      : typeof code === 'string' && /^SQLITE_(BUSY|LOCKED)/.test(code)
        ? 'end what holds it locked (a sqlite3 shell, a backup holding a transaction open)'
        : 'make its disk and file writable for this user';
  return new StoreUnavailableError(
    `the store ${location} refused this command's write: ${why}; ${remedy}, then run the command again`,
    error,
  );
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
