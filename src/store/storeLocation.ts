import { join } from 'node:path';
import { ConfigError } from '../errors.js';
import { redactUrlCredentials } from '../secrets/urlCredentials.js';
import type { StoreConfig } from './storeConfig.js';

export const STORE_FILE_NAME = 'changefeed.sqlite';

export type StoreLocation =
  | { readonly kind: 'sqlite'; readonly file: string }
  | {
      readonly kind: 'postgres';
      /** As configured: a password here is the one from the URL, never the file's. */
      readonly url: string;
      /** `store.passwordFile`, read when the store opens. */
      readonly passwordFile?: string;
      readonly schema: string;
      readonly maxConnections: number;
      /** `store.preparedStatements` (true when absent): false sends every statement unnamed. */
      readonly preparedStatements?: boolean;
    };

/**
 * Where the store is. Both engines keep every tenant of a deployment in one place, told apart by
 * a `tenant` column: SQLite in the one file `store.url` names (by default
 * `<stateDir>/changefeed.sqlite`), PostgreSQL in one schema.
 */
export function storeLocation(config: { stateDir: string; store: StoreConfig }): StoreLocation {
  const url = config.store.url ?? `sqlite:${join(config.stateDir, STORE_FILE_NAME)}`;
  if (/^postgres(ql)?:\/\//i.test(url))
    return {
      kind: 'postgres',
      url,
      ...(config.store.passwordFile === undefined ? {} : { passwordFile: config.store.passwordFile }),
      schema: config.store.schema,
      maxConnections: config.store.maxConnections,
      preparedStatements: config.store.preparedStatements,
    };
  if (!url.startsWith('sqlite:'))
    throw new ConfigError(
      `store.url must start with sqlite: or postgres:// (got "${redactUrlCredentials(url).slice(0, 80)}")`,
    );
  const path = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
  if (path === '' || path.startsWith('//'))
    throw new ConfigError(`store.url "${url}" names no file: write sqlite:<path>, e.g. sqlite:state/changefeed.sqlite`);
  return { kind: 'sqlite', file: path };
}

/** The location for messages and `status`: a path, or the URL without its password. */
export function describeStoreLocation(location: StoreLocation): string {
  return location.kind === 'sqlite' ? location.file : redactUrlCredentials(location.url);
}
