import type { ChangefeedStore } from './changefeedStore.js';

/**
 * A store engine serving the tenants of one process: SQLite opens one file per tenant,
 * PostgreSQL one connection pool for all of them. Opened once by the daemon or a command.
 */
export interface StoreBackend {
  readonly kind: 'sqlite' | 'postgres';
  /** For messages: the path or the URL without its password. */
  readonly location: string;
  /**
   * The store of one tenant. `fence`, on a shared store, is checked inside every write
   * transaction of the tenant (see docs/scaling.md); a store without one never checks.
   */
  tenantStore(tenant: string, options?: TenantStoreOptions): Promise<ChangefeedStore>;
  close(): Promise<void>;
}

export interface TenantStoreOptions {
  fence?: WriteFence;
}

/**
 * Proof, checked in a write transaction, that this replica still holds the tenant's lease.
 * `transaction` is the engine's handle of the open transaction (a pg client on PostgreSQL).
 * Throws LEASE_LOST when another replica may hold the tenant now.
 */
export interface WriteFence {
  check(transaction: unknown): Promise<void>;
  /**
   * The longest one statement of a fenced transaction may run, when the engine can bound it
   * (PostgreSQL: `SET LOCAL statement_timeout`). A fenced transaction holds its lease row's lock,
   * which a takeover waits for; without a bound the engine's own statement timeout applies.
   */
  readonly statementTimeoutMs?: number;
}
