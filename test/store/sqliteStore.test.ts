import { describe } from 'vitest';
import { storeConfigSchema } from '../../src/store/storeConfig.js';
import { makeTempDir } from '../support/tempDir.js';
import { defineStoreContractTests } from './storeContract.suite.js';

describe('the SQLite store keeps the store contract', () => {
  defineStoreContractTests(() => ({ stateDir: makeTempDir(), store: storeConfigSchema.parse({}) }));
});
