import Database from 'better-sqlite3';
import { describe } from 'vitest';
import { storeConfigSchema } from '../../src/store/storeConfig.js';
import { storeLocation } from '../../src/store/storeLocation.js';
import { REQUEUE_COUNT_KEY } from '../../src/store/storeRecords.js';
import { makeTempDir } from '../support/tempDir.js';
import { defineStoreContractTests } from './storeContract.suite.js';

describe('the SQLite store keeps the store contract', () => {
  defineStoreContractTests(
    () => ({ stateDir: makeTempDir(), store: storeConfigSchema.parse({}) }),
    // A tenant's events are numbered on from its journal head: the head is moved past the gap.
    (settings, tenant, positions) => {
      const location = storeLocation(settings);
      if (location.kind !== 'sqlite') throw new Error('the SQLite contract tests opened a PostgreSQL store');
      const db = new Database(location.file);
      try {
        db.prepare('UPDATE journal_heads SET head = head + ? WHERE tenant = ?').run(positions, tenant);
      } finally {
        db.close();
      }
    },
    (settings) => {
      const location = storeLocation(settings);
      if (location.kind !== 'sqlite') throw new Error('the SQLite contract tests opened a PostgreSQL store');
      const db = new Database(location.file);
      try {
        for (const write of ['INSERT', 'UPDATE'])
          db.exec(`CREATE TRIGGER refuse_requeue_count_${write} BEFORE ${write} ON meta
            WHEN NEW.key = '${REQUEUE_COUNT_KEY}' BEGIN SELECT RAISE(ABORT, 'the re-queue count is refused'); END`);
      } finally {
        db.close();
      }
    },
  );
});
