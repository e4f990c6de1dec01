import type pg from 'pg';
import { ChangefeedError } from '../../errors.js';
import { checkTables, refuseVersion } from './migrate.js';
import { MIGRATIONS } from './migrations.js';
import { OlderSchemaError } from '../storeError.js';
import { latestSchemaVersion, schemaStep } from '../schemaVersion.js';

/**
 * Checks, without creating or changing anything, that `schema` holds a store a command may open:
 * STORE_MISSING when no daemon has created one there (as SQLite says of a missing file), and, for
 * a reader (`readonly`, which cannot migrate), a store of exactly this build's schema version with
 * its tables (a writer's migrate() checks them).
 * `client` must not be in a transaction; the schema is named explicitly, not through search_path.
 */
export async function checkExistingSchema(
  client: pg.ClientBase,
  location: { schema: string; shown: string },
  options: { readonly: boolean },
): Promise<void> {
  const where = `${location.shown} (schema ${location.schema})`;
  const table = await client.query<{ found: boolean }>('SELECT to_regclass($1) IS NOT NULL AS found', [
    `"${location.schema}".schema_migrations`,
  ]);
  if (table.rows[0]?.found !== true)
    throw new ChangefeedError('STORE_MISSING', `no store at ${where}; has the daemon run against this store.url?`);
  const { rows } = await client.query<{ version: number | null }>(
    `SELECT MAX(version) AS version FROM "${location.schema}".schema_migrations`,
  );
  const version = rows[0]?.version ?? 0;
  // The daemon creates schema_migrations in the transaction that creates the rest, so an empty one
  // was made by hand or left by a partial restore: "has the daemon run?" would mislead.
  if (version === 0)
    throw new ChangefeedError(
      'STORE_MISSING',
      `the store at ${where} is half-created: its schema_migrations table records no version. Start the ` +
        `daemon against this store.url, which creates the store there when the schema holds no other tables; ` +
        `if it refuses because of tables left there, drop them or the schema (DROP SCHEMA "${location.schema}" ` +
        'CASCADE) and start it again',
    );
  const step = schemaStep(version, MIGRATIONS.length);
  refuseVersion(step, version, location.schema, where);
  if (options.readonly && step.action === 'migrate')
    throw new OlderSchemaError(
      `the store at ${where} has schema version ${version}, older than this build's ` +
        `(${latestSchemaVersion(MIGRATIONS.length)}); ` +
        'start the daemon of this build once, which migrates it, then run this command again',
    );
  if (options.readonly && step.action === 'current') await checkTables(client, location.schema, where, version);
}
