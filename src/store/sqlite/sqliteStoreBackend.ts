import { existsSync } from 'node:fs';
import { ChangefeedError } from '../../errors.js';
import type { StoreBackend } from '../storeBackend.js';
import { DEFAULT_TENANT } from '../../tenants/tenant.js';
import { storeLocation } from '../storeLocation.js';
import type { StoreConfig } from '../storeConfig.js';
import { SqliteChangefeedStore } from './sqliteStore.js';

/**
 * SQLite as the store engine: one file per tenant (storeLocation), opened on first use and kept
 * open. Only one process may write them (the state directory lock), so there are no leases.
 */
export class SqliteStoreBackend implements StoreBackend {
  readonly kind = 'sqlite';
  private readonly open = new Map<string, SqliteChangefeedStore>();

  constructor(
    private readonly config: { stateDir: string; store: StoreConfig },
    private readonly options: { readonly?: boolean; mustExist?: boolean } = {},
  ) {}

  get location(): string {
    const location = storeLocation(this.config, DEFAULT_TENANT);
    return location.kind === 'sqlite' ? location.file : '';
  }

  async tenantStore(tenant: string): Promise<SqliteChangefeedStore> {
    return this.openNow(tenant);
  }

  /** As tenantStore, at once: SQLite opens synchronously, so a daemon can check it in its constructor. */
  openNow(tenant: string): SqliteChangefeedStore {
    const known = this.open.get(tenant);
    if (known?.isOpen) return known;
    const location = storeLocation(this.config, tenant);
    if (location.kind !== 'sqlite') throw new Error('unreachable: a SQLite backend was given a PostgreSQL location');
    if (this.options.mustExist && !existsSync(location.file))
      throw new ChangefeedError(
        'STORE_MISSING',
        `no store at ${location.file}; has the daemon run with stateDir ${this.config.stateDir}?`,
      );
    const store = SqliteChangefeedStore.open(location.file, {
      readonly: this.options.readonly ?? false,
      ...(location.cacheKiB === undefined ? {} : { cacheKiB: location.cacheKiB }),
    });
    this.open.set(tenant, store);
    return store;
  }

  async close(): Promise<void> {
    for (const store of this.open.values()) await store.close();
    this.open.clear();
  }
}
