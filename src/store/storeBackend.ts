import type pg from 'pg';
import type { WriteFence } from '../cluster/writeFence.js';
import type { TenantRecords } from '../tenants/tenant.js';
import type { ChangefeedStore } from './changefeedStore.js';
import type { StoreActivity } from './storeActivity.js';

/**
 * A store engine serving the tenants of one process: SQLite keeps them in one file on one
 * connection, PostgreSQL in one schema through one connection pool. Opened once by the daemon or a command.
 * Callers ask it what it can do (`sharedByReplicas`) rather than which engine it is.
 */
export interface StoreBackend {
  /** For messages: the path or the URL without its password. */
  readonly location: string;
  /**
   * Present when several replicas may open the store at once (PostgreSQL): they then share its
   * tenants out by leases and fence every write. Absent when one process owns the store (SQLite,
   * under the state directory's lock): no leases, no fences.
   */
  readonly sharedByReplicas: SharedByReplicas | undefined;
  /** The transactions and statements its tenants sent so far (changefeed_store_*_total). */
  readonly activity: StoreActivity;
  /**
   * The store of one tenant. `fence` is checked inside every write transaction of the tenant
   * (see docs/scaling.md); an engine not shared by replicas refuses one, as it could not check it.
   */
  tenantStore(tenant: string, options?: TenantStoreOptions): Promise<ChangefeedStore>;
  /** Who owns each API key and each tenant file's last valid text, kept in the store. */
  tenantRecords(): TenantRecords;
  close(): Promise<void>;
}

/** What a store shared by replicas gives them to share its tenants out (cluster/). */
export interface SharedByReplicas {
  /**
   * Connections of their own for the lease table (LeaseTable, the feed ticket key), so renewals
   * never queue behind the tenants' queries.
   */
  readonly leasePool: pg.Pool;
}

/** How a command or the daemon opens the store engine (openStoreBackend). */
export interface OpenStoreOptions {
  /**
   * Open existing stores for reading only (inspection commands beside a running daemon): nothing
   * is created or migrated, and every write is refused by the database.
   */
  readonly?: boolean;
  /** A store no daemon has created (SQLite file, PostgreSQL schema) is STORE_MISSING instead of a new empty one. */
  mustExist?: boolean;
  /** Names this process's connections in pg_stat_activity (the instance id). */
  applicationName?: string;
  /**
   * PostgreSQL: the server ends a transaction left idle this long (default 60 s). With leases, the
   * lease length: a replica paused inside a write transaction must not hold the tenant's rows past it.
   */
  idleInTransactionTimeoutMs?: number;
}

export interface TenantStoreOptions {
  fence?: WriteFence;
}
