import { RequeueCounts } from '../../src/store/requeueCounts.js';
import { openDatabase } from '../../src/store/sqlite/database.js';
import { SqliteChangefeedStore } from '../../src/store/sqlite/sqliteStore.js';
import { watchedLogCoverageRead } from '../../src/store/sqlite/watchedLogs.js';
import { DEFAULT_TENANT } from '../../src/tenants/tenant.js';

/** A tenant's store on a connection of its own, which closing the store closes. */
class SqliteStoreFile extends SqliteChangefeedStore {
  override async close(): Promise<void> {
    await super.close();
    if (this.db.open) this.db.close();
  }
}

/**
 * A tenant (`default` unless named) of a SQLite store file, on a connection of its own that
 * closing the store closes: how a test seeds a store before a daemon starts, or reads one beside it.
 */
export function openSqliteStoreFile(
  file: string,
  options: { readonly?: boolean; tenant?: string } = {},
): SqliteChangefeedStore {
  const db = openDatabase(file, options);
  return new SqliteStoreFile(db, options.tenant ?? DEFAULT_TENANT, new RequeueCounts(), watchedLogCoverageRead());
}
