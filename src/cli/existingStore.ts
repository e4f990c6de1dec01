import { existsSync } from 'node:fs';
import { ChangefeedError } from '../errors.js';
import { ChangefeedStore } from '../store/changefeedStore.js';
import { openDatabase, storePath } from '../store/sqlite/database.js';

/**
 * The store a command inspects or changes, which a daemon must have created: STORE_MISSING
 * (exit 1) names the path and the stateDir otherwise, rather than creating an empty store.
 * `readonly` opens it beside a running daemon without taking part in its writes.
 */
export function openExistingStore(stateDir: string, options: { readonly?: boolean } = {}): ChangefeedStore {
  const file = storePath(stateDir);
  if (!existsSync(file))
    throw new ChangefeedError('STORE_MISSING', `no store at ${file}; has the daemon run with stateDir ${stateDir}?`);
  return options.readonly ? new ChangefeedStore(openDatabase(file, { readonly: true })) : ChangefeedStore.open(file);
}
