import { describe } from 'vitest';
import { storeConfigSchema } from '../../src/store/storeConfig.js';
import { REQUEUE_COUNT_KEY } from '../../src/store/storeRecords.js';
import { POSTGRES_URL } from '../support/postgresAdmin.js';
import { makeTempDir } from '../support/tempDir.js';
import { admin, freshSchema } from './postgresTestDb.js';
import { defineStoreContractTests } from './storeContract.suite.js';

describe.skipIf(!admin)('the PostgreSQL store keeps the store contract', () => {
  defineStoreContractTests(
    () => ({
      stateDir: makeTempDir(),
      store: storeConfigSchema.parse({ url: POSTGRES_URL, schema: freshSchema(), maxConnections: 4 }),
    }),
    // One identity numbers the events of every tenant: the next seq is set past the gap.
    async ({ store }, _tenant, positions) => {
      const events = `${admin!.escapeIdentifier(store.schema)}.events`;
      const { rows } = await admin!.query<{ next: string }>(
        `SELECT COALESCE(MAX(seq), 0) + 1 + $1::bigint AS next FROM ${events}`,
        [positions],
      );
      await admin!.query(`ALTER TABLE ${events} ALTER COLUMN seq RESTART WITH ${Number(rows[0]!.next)}`);
    },
    async ({ store }) => {
      const schema = admin!.escapeIdentifier(store.schema);
      await admin!.query(`CREATE FUNCTION ${schema}.refuse_requeue_count() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'the re-queue count is refused'; END $$`);
      await admin!.query(`CREATE TRIGGER refuse_requeue_count BEFORE INSERT OR UPDATE ON ${schema}.meta FOR EACH ROW
        WHEN (NEW.key = '${REQUEUE_COUNT_KEY}') EXECUTE FUNCTION ${schema}.refuse_requeue_count()`);
    },
  );
});
