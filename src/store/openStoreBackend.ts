import { loadOnDemand } from '../loadOnDemand.js';
import type { PostgresStoreBackend } from './postgres/postgresStoreBackend.js';
import { SqliteStoreBackend } from './sqlite/sqliteStoreBackend.js';
import type { OpenStoreOptions, StoreBackend } from './storeBackend.js';
import type { StoreConfig } from './storeConfig.js';
import { StoreError } from './storeError.js';
import { storeLocation } from './storeLocation.js';

/** The store engine `store.url` names: SQLite (the default) or PostgreSQL. */
export async function openStoreBackend(
  config: { stateDir: string; store: StoreConfig },
  options: OpenStoreOptions = {},
): Promise<StoreBackend> {
  const location = storeLocation(config);
  if (location.kind === 'sqlite') return new SqliteStoreBackend(config, options);
  return (await loadPostgresEngine()).open(location, options);
}

/** The PostgreSQL engine (and with it the pg package), loaded only for a store.url of postgres://. */
export async function loadPostgresEngine(): Promise<typeof PostgresStoreBackend> {
  const engine = await loadOnDemand(
    () => import('./postgres/postgresStoreBackend.js'),
    (reason, cause) =>
      new StoreError(`cannot load the PostgreSQL store engine (${reason}); reinstall changefeed`, cause),
  );
  return engine.PostgresStoreBackend;
}
