import { RequeueCounts } from '../requeueCounts.js';
import { existsSync } from 'node:fs';
import { ChangefeedError } from '../../errors.js';
import { StoreActivity } from '../storeActivity.js';
import type { OpenStoreOptions, StoreBackend, TenantStoreOptions } from '../storeBackend.js';
import { DEFAULT_TENANT } from '../../tenants/tenant.js';
import { storeLocation } from '../storeLocation.js';
import type { StoreConfig } from '../storeConfig.js';
import { openDatabase, type Db } from './database.js';
import { StoreError } from '../storeError.js';
import { SqliteTenantRecords } from './tenantRecordRows.js';
import { SqliteChangefeedStore } from './sqliteStore.js';
import { watchedLogCoverageRead } from './watchedLogs.js';
import { countActivity } from './tenantConnection.js';
import { tenantHasRows } from './tenantTables.js';

/**
 * SQLite as the store engine: every tenant of the process in the one file `store.url` names, on
 * one connection opened on first use and kept open. A connection per tenant cost about 500 KB of
 * native memory each (docs/scaling.md); the tenants' rows are told apart by their `tenant` column,
 * as on PostgreSQL. Only one process may write the file (the state directory lock), so there are
 * no leases.
 */
export class SqliteStoreBackend implements StoreBackend {
  readonly sharedByReplicas = undefined;
  readonly activity = new StoreActivity('sqlite');
  private connection: Db | undefined;
  private readonly stores = new Map<string, SqliteChangefeedStore>();
  private readonly requeueCounts = new RequeueCounts();
  private readonly coverageRead = watchedLogCoverageRead();

  constructor(
    private readonly config: { stateDir: string; store: StoreConfig },
    private readonly options: Pick<OpenStoreOptions, 'readonly' | 'mustExist'> = {},
  ) {}

  get location(): string {
    return this.file;
  }

  private get file(): string {
    const location = storeLocation(this.config);
    if (location.kind !== 'sqlite') throw new Error('unreachable: a SQLite backend was given a PostgreSQL location');
    return location.file;
  }

  async tenantStore(tenant: string, options: TenantStoreOptions = {}): Promise<SqliteChangefeedStore> {
    // A fence given here would be a lease check that never runs: refused, not ignored.
    if (options.fence)
      throw new StoreError(`the SQLite store at ${this.file} is written by one process and takes no write fence`);
    const known = this.stores.get(tenant);
    if (known?.isOpen) return known;
    const db = this.connectionNow();
    // A command is told when the tenant has no rows: the daemon has not run it.
    if (tenant !== DEFAULT_TENANT && this.options.mustExist && !tenantHasRows(db, tenant))
      throw new ChangefeedError(
        'STORE_MISSING',
        `tenant ${tenant} has nothing in the store at ${this.file}; has the daemon run it?`,
      );
    const store = new SqliteChangefeedStore(db, tenant, this.requeueCounts, this.coverageRead);
    this.stores.set(tenant, store);
    return store;
  }

  private connectionNow(): Db {
    if (this.connection?.open) return this.connection;
    const file = this.file;
    if (this.options.mustExist && !existsSync(file))
      throw new ChangefeedError(
        'STORE_MISSING',
        `no store at ${file}; has the daemon run with stateDir ${this.config.stateDir}?`,
      );
    this.connection = openDatabase(file, { readonly: this.options.readonly ?? false });
    countActivity(this.connection, this.activity);
    return this.connection;
  }

  /** Who owns each API key and each tenant file's last valid text, kept in the store's file. */
  tenantRecords(): SqliteTenantRecords {
    return new SqliteTenantRecords(this.connectionNow());
  }

  async close(): Promise<void> {
    for (const store of this.stores.values()) await store.close();
    this.stores.clear();
    if (this.connection?.open) this.connection.close();
    this.connection = undefined;
  }
}
