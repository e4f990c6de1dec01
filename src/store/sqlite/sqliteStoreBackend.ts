import { existsSync } from 'node:fs';
import { ChangefeedError } from '../../errors.js';
import type { StoreBackend } from '../storeBackend.js';
import { DEFAULT_TENANT } from '../../tenants/tenant.js';
import { storeLocation } from '../storeLocation.js';
import type { StoreConfig } from '../storeConfig.js';
import { openDatabase, StoreError, type Db } from './database.js';
import { SqliteTenantRecords } from './tenantRecordRows.js';
import { legacyTenantFile, moveLegacyTenantFile, type MovedTenant } from './legacyTenantFile.js';
import { SqliteChangefeedStore } from './sqliteStore.js';
import { tenantHasRows } from './tenantTables.js';

export interface SqliteBackendOptions {
  readonly?: boolean;
  mustExist?: boolean;
  /** Told when a tenant's file of an earlier build was moved into the shared file. */
  onTenantMoved?: (moved: MovedTenant) => void;
}

/**
 * SQLite as the store engine: every tenant of the process in the one file `store.url` names, on
 * one connection opened on first use and kept open. A connection per tenant cost about 500 KB of
 * native memory each (docs/scaling.md); the tenants' rows are told apart by their `tenant` column,
 * as on PostgreSQL. Only one process may write the file (the state directory lock), so there are
 * no leases.
 */
export class SqliteStoreBackend implements StoreBackend {
  readonly kind = 'sqlite';
  private connection: Db | undefined;
  private readonly stores = new Map<string, SqliteChangefeedStore>();

  constructor(
    private readonly config: { stateDir: string; store: StoreConfig },
    private readonly options: SqliteBackendOptions = {},
  ) {}

  get location(): string {
    return this.file;
  }

  private get file(): string {
    const location = storeLocation(this.config);
    if (location.kind !== 'sqlite') throw new Error('unreachable: a SQLite backend was given a PostgreSQL location');
    return location.file;
  }

  async tenantStore(tenant: string): Promise<SqliteChangefeedStore> {
    return this.openNow(tenant);
  }

  /** As tenantStore, at once: SQLite opens synchronously. */
  openNow(tenant: string): SqliteChangefeedStore {
    const known = this.stores.get(tenant);
    if (known?.isOpen) return known;
    const db = this.connectionNow();
    if (tenant !== DEFAULT_TENANT) this.checkTenant(db, tenant);
    const store = new SqliteChangefeedStore(db, tenant, false);
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
    return this.connection;
  }

  /**
   * A tenant of an earlier build's own file is moved in; a command is told when it has no rows.
   * Only the daemon moves one, under the state directory's lock: a command (mustExist) holds no
   * lock, and a daemon of the earlier build may still be writing the file it would set aside.
   */
  private checkTenant(db: Db, tenant: string): void {
    if (!this.options.readonly && !this.options.mustExist) {
      const moved = moveLegacyTenantFile(db, this.file, tenant, Date.now());
      if (moved) this.options.onTenantMoved?.(moved);
      return;
    }
    if (tenantHasRows(db, tenant)) return;
    const ownFile = legacyTenantFile(this.file, tenant);
    if (existsSync(ownFile))
      throw new StoreError(
        `tenant ${tenant} is still in its own file ${ownFile}, from an earlier build; ` +
          `start the daemon of this build once, which moves it into ${this.file}, then run this command again`,
      );
    if (this.options.mustExist)
      throw new ChangefeedError(
        'STORE_MISSING',
        `tenant ${tenant} has nothing in the store at ${this.file}; has the daemon run it?`,
      );
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
