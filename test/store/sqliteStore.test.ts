import { join } from 'node:path';
import { describe } from 'vitest';
import { SqliteChangefeedStore } from '../../src/store/sqlite/sqliteStore.js';
import { makeTempDir } from '../support/tempDir.js';
import { defineStoreContractTests } from './storeContract.suite.js';

describe('the SQLite store keeps the store contract', () => {
  defineStoreContractTests(() => {
    const file = join(makeTempDir(), 'changefeed.sqlite');
    let store = SqliteChangefeedStore.open(file);
    return Promise.resolve({
      store,
      reopen: async () => {
        await store.close();
        store = SqliteChangefeedStore.open(file);
        return store;
      },
      cleanup: () => store.close(),
    });
  });
});
