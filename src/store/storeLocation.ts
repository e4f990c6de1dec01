import { dirname, join } from 'node:path';
import { ChangefeedError } from '../errors.js';
import { redactUrlCredentials } from '../secrets/urlCredentials.js';
import { DEFAULT_TENANT } from '../tenants/tenant.js';
import type { StoreConfig } from './storeConfig.js';

export const STORE_FILE_NAME = 'changefeed.sqlite';

export type StoreLocation =
  | { readonly kind: 'sqlite'; readonly file: string; readonly cacheKiB?: number }
  | { readonly kind: 'postgres'; readonly url: string; readonly schema: string; readonly maxConnections: number };

export class StoreUrlError extends ChangefeedError {
  constructor(message: string) {
    super('CONFIG_INVALID', message);
  }
}

/**
 * Where a tenant's store is. SQLite keeps one file per tenant, so tenants never share a lock or
 * a disk-full outage: `default` at the configured path (today's layout), any other tenant beside
 * it under `tenants/<name>/`. PostgreSQL keeps every tenant in one schema, told apart by a column.
 */
export function storeLocation(config: { stateDir: string; store: StoreConfig }, tenant: string): StoreLocation {
  const url = config.store.url ?? `sqlite:${join(config.stateDir, STORE_FILE_NAME)}`;
  if (/^postgres(ql)?:\/\//i.test(url))
    return { kind: 'postgres', url, schema: config.store.schema, maxConnections: config.store.maxConnections };
  if (!url.startsWith('sqlite:'))
    throw new StoreUrlError(
      `store.url must start with sqlite: or postgres:// (got "${redactUrlCredentials(url).slice(0, 80)}")`,
    );
  const path = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
  if (path === '' || path.startsWith('//'))
    throw new StoreUrlError(
      `store.url "${url}" names no file: write sqlite:<path>, e.g. sqlite:state/changefeed.sqlite`,
    );
  if (tenant === DEFAULT_TENANT) return { kind: 'sqlite', file: path };
  return {
    kind: 'sqlite',
    file: join(dirname(path), 'tenants', tenant, STORE_FILE_NAME),
    cacheKiB: TENANT_SQLITE_CACHE_KIB,
  };
}

/**
 * Page cache of each SQLite connection of a tenant other than `default`, KiB. better-sqlite3's
 * build default is 16 MB per connection (SQLite's own is 2 MiB): with a connection per tenant
 * that grows towards 16 GB for 1,000 tenants as their files grow, against a target of 500 MB for
 * the process (docs/scaling.md). A tenant's writes touch the tail of a few indexes, and a poll
 * reads one log's cursor and seen ids, which fit in far less. `default` (a single-company
 * daemon) keeps the build's default.
 */
export const TENANT_SQLITE_CACHE_KIB = 256;

/** The location for messages and `status`: a path, or the URL without its password. */
export function describeStoreLocation(location: StoreLocation): string {
  return location.kind === 'sqlite' ? location.file : redactUrlCredentials(location.url);
}
