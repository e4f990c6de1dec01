import { describe } from 'vitest';
import { PostgresStoreBackend } from '../../src/store/postgres/postgresStoreBackend.js';
import { POSTGRES_URL } from '../support/postgresAdmin.js';
import { admin, freshSchema } from './postgresTestDb.js';
import { defineStoreContractTests } from './storeContract.suite.js';

describe.skipIf(!admin)('the PostgreSQL store keeps the store contract', () => {
  defineStoreContractTests(async () => {
    const schema = freshSchema();
    const open = () => PostgresStoreBackend.open({ url: POSTGRES_URL, schema, maxConnections: 4 });
    let backend = await open();
    return {
      store: await backend.tenantStore('t1'),
      reopen: async () => {
        await backend.close();
        backend = await open();
        return backend.tenantStore('t1');
      },
      cleanup: () => backend.close(),
    };
  });
});
