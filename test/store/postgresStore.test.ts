import { describe } from 'vitest';
import { storeConfigSchema } from '../../src/store/storeConfig.js';
import { POSTGRES_URL } from '../support/postgresAdmin.js';
import { makeTempDir } from '../support/tempDir.js';
import { admin, freshSchema } from './postgresTestDb.js';
import { defineStoreContractTests } from './storeContract.suite.js';

describe.skipIf(!admin)('the PostgreSQL store keeps the store contract', () => {
  defineStoreContractTests(() => ({
    stateDir: makeTempDir(),
    store: storeConfigSchema.parse({ url: POSTGRES_URL, schema: freshSchema(), maxConnections: 4 }),
  }));
});
