import type { ChangefeedStore } from '../store/changefeedStore.js';
import { openStoreBackend } from '../store/openStoreBackend.js';
import type { StoreConfig } from '../store/storeConfig.js';
import { DEFAULT_TENANT } from '../tenants/tenant.js';

/**
 * Runs `use` with the store of one tenant, which a daemon must have created: on SQLite a missing
 * file is STORE_MISSING (exit 1) naming the path and the stateDir, rather than a new empty store.
 * `readonly` opens it beside a running daemon without taking part in its writes. The store and
 * its engine are closed afterwards, whatever `use` does.
 */
export async function withExistingStore<T>(
  config: { stateDir: string; store: StoreConfig },
  options: { readonly?: boolean; tenant?: string | undefined },
  use: (store: ChangefeedStore) => Promise<T>,
): Promise<T> {
  const backend = await openStoreBackend(config, { readonly: options.readonly ?? false, mustExist: true });
  try {
    return await use(await backend.tenantStore(options.tenant ?? DEFAULT_TENANT));
  } finally {
    await backend.close();
  }
}
