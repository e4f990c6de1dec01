import { describe, expect, it, vi } from 'vitest';
import { SqliteStoreBackend } from '../../src/store/sqlite/sqliteStoreBackend.js';
import { storeConfigSchema } from '../../src/store/storeConfig.js';
import { makeTempDir } from '../support/tempDir.js';
import { expectTenantsKeptApart } from './contract/tenantIsolation.js';
import { entry, ingest, T } from './contract/storeFixtures.js';

function backendIn(stateDir: string, options: ConstructorParameters<typeof SqliteStoreBackend>[1] = {}) {
  return new SqliteStoreBackend({ stateDir, store: storeConfigSchema.parse({}) }, options);
}

describe('the SQLite store keeps the tenants of a process in one file', () => {
  it('keeps two tenants of one file apart', async () => {
    const backend = backendIn(makeTempDir());
    await expectTenantsKeptApart(await backend.tenantStore('one'), await backend.tenantStore('two'));
    await backend.close();
  });

  it('gives every tenant the one connection and prepares each statement once for all of them', async () => {
    const backend = backendIn(makeTempDir());
    const first = await backend.tenantStore('t-0');
    await first.sinks.activate([{ name: 'a', type: 'file' }], T);
    await ingest(first, [entry('e-0')]);
    await first.outbox.pending('a', 0, 10);
    const prepare = vi.spyOn(first.db, 'prepare');
    for (let i = 1; i <= 50; i++) {
      const store = await backend.tenantStore(`t-${i}`);
      expect(store.db).toBe(first.db);
      await store.sinks.activate([{ name: 'a', type: 'file' }], T);
      await ingest(store, [entry(`e-${i}`)]);
      expect(await store.outbox.pending('a', 0, 10)).toHaveLength(1);
    }
    expect(prepare).not.toHaveBeenCalled();
    await backend.close();
  });

  it('tells a command that reads the store of a tenant the daemon has not run', async () => {
    const dir = makeTempDir();
    await backendIn(dir).tenantStore('default');
    const reader = backendIn(dir, { readonly: true, mustExist: true });
    await expect(reader.tenantStore('zeta')).rejects.toThrow(/tenant zeta has nothing in the store/);
    await reader.close();
  });
});
