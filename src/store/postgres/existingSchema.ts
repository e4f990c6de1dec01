import type pg from 'pg';
import { ChangefeedError } from '../../errors.js';
import { prereleaseRemedy } from './migrate.js';
import { MIGRATIONS } from './migrations.js';
import { PostgresStoreError } from './postgresStoreError.js';
import { latestSchemaVersion, PrereleaseSchemaError, schemaStep } from '../schemaVersion.js';

/**
 * Checks, without creating or changing anything, that `schema` holds a store a command may open:
 * STORE_MISSING when no daemon has created one there (as SQLite says of a missing file), and, for
 * a reader (`readonly`, which cannot migrate), a store of exactly this build's schema version.
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
  const version = table.rows[0]?.found
    ? ((
        await client.query<{ version: number | null }>(
          `SELECT MAX(version) AS version FROM "${location.schema}".schema_migrations`,
        )
      ).rows[0]?.version ?? 0)
    : 0;
  if (version === 0)
    throw new ChangefeedError('STORE_MISSING', `no store at ${where}; has the daemon run against this store.url?`);
  const step = schemaStep(version, MIGRATIONS.length);
  const latest = latestSchemaVersion(MIGRATIONS.length);
  if (step.action === 'prerelease')
    throw new PrereleaseSchemaError(where, version, prereleaseRemedy(`"${location.schema}"`));
  if (step.action === 'newer')
    throw new PostgresStoreError(
      `the store at ${where} has schema version ${version}, newer than this build knows (${latest}); upgrade changefeed`,
    );
  if (options.readonly && step.action === 'migrate')
    throw new PostgresStoreError(
      `the store at ${where} has schema version ${version}, older than this build's (${latest}); ` +
        'start the daemon of this build once, which migrates it, then run this command again',
    );
}
