import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteStoreBackend } from '../../src/store/sqlite/sqliteStoreBackend.js';
import { storeLocation, TENANT_SQLITE_CACHE_KIB } from '../../src/store/storeLocation.js';
import { makeTempDir } from '../support/tempDir.js';

const config = (stateDir: string) => ({ stateDir, store: { schema: 'changefeed', maxConnections: 10 } });

describe('SQLite page cache per tenant', () => {
  it('leaves the tenant default at the build default (16 MB) and gives every other tenant a small cache', () => {
    expect(storeLocation(config('/s'), 'default')).toEqual({ kind: 'sqlite', file: '/s/changefeed.sqlite' });
    expect(storeLocation(config('/s'), 'acme')).toEqual({
      kind: 'sqlite',
      file: join('/s', 'tenants', 'acme', 'changefeed.sqlite'),
      cacheKiB: TENANT_SQLITE_CACHE_KIB,
    });
  });

  it('opens a tenant store with that cache, in KiB', async () => {
    const backend = new SqliteStoreBackend(config(makeTempDir()));
    try {
      const tenant = backend.openNow('acme');
      const fallback = backend.openNow('default');
      expect(tenant.db.pragma('cache_size', { simple: true })).toBe(-TENANT_SQLITE_CACHE_KIB);
      expect(fallback.db.pragma('cache_size', { simple: true })).toBe(-16000);
    } finally {
      await backend.close();
    }
  });
});
