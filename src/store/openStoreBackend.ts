import { PostgresStoreBackend } from './postgres/postgresStoreBackend.js';
import { SqliteStoreBackend } from './sqlite/sqliteStoreBackend.js';
import type { OpenStoreOptions, StoreBackend } from './storeBackend.js';
import type { StoreConfig } from './storeConfig.js';
import { storeLocation } from './storeLocation.js';

/** The store engine `store.url` names: SQLite (the default) or PostgreSQL. */
export async function openStoreBackend(
  config: { stateDir: string; store: StoreConfig },
  options: OpenStoreOptions = {},
): Promise<StoreBackend> {
  const location = storeLocation(config);
  if (location.kind === 'sqlite') return new SqliteStoreBackend(config, options);
  return PostgresStoreBackend.open(location, options);
}
