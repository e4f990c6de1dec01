import { randomBytes } from 'node:crypto';
import { afterAll, describe } from 'vitest';
import { PostgresStoreBackend } from '../../src/store/postgres/postgresStoreBackend.js';
import { connectPostgres, dropSchema, POSTGRES_URL } from '../support/postgresAdmin.js';
import { defineStoreContractTests } from './storeContract.suite.js';

const connected = await connectPostgres();
const admin = 'client' in connected ? connected.client : undefined;
if (!admin) {
  const reason = 'reason' in connected ? connected.reason : 'no PostgreSQL';
  if (process.env.CI) throw new Error(`${reason} (CI is set: database tests must not be skipped)`);
  console.warn(`skipping PostgreSQL store tests: ${reason}`);
}
afterAll(async () => {
  await admin?.end();
});

describe.skipIf(!admin)('the PostgreSQL store keeps the store contract', () => {
  defineStoreContractTests(async () => {
    const schema = `cf_test_${randomBytes(6).toString('hex')}`;
    const open = () => PostgresStoreBackend.open({ url: POSTGRES_URL, schema, maxConnections: 4 });
    let backend = await open();
    return {
      store: await backend.tenantStore('t1'),
      reopen: async () => {
        await backend.close();
        backend = await open();
        return backend.tenantStore('t1');
      },
      cleanup: async () => {
        await backend.close();
        await dropSchema(admin!, schema);
      },
    };
  });
});
