import type { StoreBackend } from './storeBackend.js';
import type { StoreConfig } from './storeConfig.js';
import { DEFAULT_TENANT } from '../tenants/tenant.js';
import { storeLocation } from './storeLocation.js';
import { SqliteStoreBackend } from './sqlite/sqliteStoreBackend.js';

export interface OpenStoreOptions {
  /** Open existing stores for reading only (inspection commands beside a running daemon). */
  readonly?: boolean;
  /** A missing SQLite file is STORE_MISSING instead of a new empty store (commands, not the daemon). */
  mustExist?: boolean;
}

/** The store engine `store.url` names: SQLite (the default) or PostgreSQL. */
export function openStoreBackend(
  config: { stateDir: string; store: StoreConfig },
  options: OpenStoreOptions = {},
): Promise<StoreBackend> {
  const location = storeLocation(config, DEFAULT_TENANT);
  if (location.kind === 'sqlite') return Promise.resolve(new SqliteStoreBackend(config, options));
  return Promise.reject(new Error('PostgreSQL store: not merged yet'));
}
