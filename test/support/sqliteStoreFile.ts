import { openDatabase } from '../../src/store/sqlite/database.js';
import { SqliteChangefeedStore } from '../../src/store/sqlite/sqliteStore.js';

/**
 * The tenant `default` of a SQLite store file, on a connection of its own that closing the store
 * closes: how a test seeds a store before a daemon starts, or reads one beside it.
 */
export function openSqliteStoreFile(file: string, options: { readonly?: boolean } = {}): SqliteChangefeedStore {
  return new SqliteChangefeedStore(openDatabase(file, options));
}
