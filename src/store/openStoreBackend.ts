import { PostgresStoreBackend } from './postgres/postgresStoreBackend.js';
import { SqliteStoreBackend } from './sqlite/sqliteStoreBackend.js';
import type { StoreBackend } from './storeBackend.js';
import type { StoreConfig } from './storeConfig.js';
import { storeLocation } from './storeLocation.js';

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
  /** With leases: how long the database lets a transaction sit idle (the lease length). */
  idleInTransactionTimeoutMs?: number;
}

/** The store engine `store.url` names: SQLite (the default) or PostgreSQL. */
export async function openStoreBackend(
  config: { stateDir: string; store: StoreConfig },
  options: OpenStoreOptions = {},
): Promise<StoreBackend> {
  const location = storeLocation(config);
  if (location.kind === 'sqlite') return new SqliteStoreBackend(config, options);
  return PostgresStoreBackend.open(location, {
    ...(options.applicationName !== undefined ? { applicationName: options.applicationName } : {}),
    ...(options.idleInTransactionTimeoutMs !== undefined
      ? { idleInTransactionTimeoutMs: options.idleInTransactionTimeoutMs }
      : {}),
    ...(options.readonly !== undefined ? { readonly: options.readonly } : {}),
    ...(options.mustExist !== undefined ? { mustExist: options.mustExist } : {}),
  });
}
