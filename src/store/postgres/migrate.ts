import { createHash } from 'node:crypto';
import type pg from 'pg';
import {
  BASELINE_VERSION,
  latestSchemaVersion,
  missingTables,
  missingTablesProblem,
  PrereleaseSchemaError,
  schemaStep,
  unknownVersionProblem,
  type SchemaStep,
} from '../schemaVersion.js';
import { BASELINE, MIGRATIONS, TABLES } from './migrations.js';
import { StoreError } from '../storeError.js';

/**
 * The advisory lock key of a schema's migrations: the first 8 bytes of a hash of its name, so
 * deployments in other schemas of the same database never wait for each other.
 */
function migrationLockKey(schema: string): string {
  return createHash('sha256').update(`changefeed.migrate:${schema}`).digest().readBigInt64BE(0).toString();
}

/**
 * Brings `schema` to the latest version (../schemaVersion.ts): a new one gets the baseline, then
 * each migration after it, one transaction each. Each transaction first takes the schema's
 * transaction-level advisory lock, then reads the applied version: replicas starting at once
 * queue on the lock, and each finds the versions applied by those before it, so every migration
 * runs exactly once. The schema itself is created under the same lock, since two
 * concurrent `CREATE SCHEMA IF NOT EXISTS` can both try to create it and one fail.
 *
 * `client` must not be in a transaction; the schema is named explicitly, not through search_path.
 */
export async function migrate(client: pg.ClientBase, schema: string, location: string): Promise<number> {
  const lockKey = migrationLockKey(schema);
  const q = `"${schema}"`;
  for (;;) {
    await client.query('BEGIN');
    try {
      await client.query('SELECT pg_advisory_xact_lock($1::bigint)', [lockKey]);
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${q}`);
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${q}.schema_migrations (
           version INTEGER PRIMARY KEY,
           applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
         )`,
      );
      const { rows } = await client.query<{ version: number | null }>(
        `SELECT MAX(version) AS version FROM ${q}.schema_migrations`,
      );
      const found = rows[0]?.version ?? 0;
      const step = schemaStep(found, MIGRATIONS.length);
      refuseVersion(step, found, schema, `${location} (schema ${schema})`);
      if (step.action === 'current') {
        await checkTables(client, schema, `${location} (schema ${schema})`, found);
        await client.query('COMMIT');
        return found;
      }
      if (step.action === 'create') await refuseForeignRelations(client, schema, location);
      // The migration's unqualified names land in the schema, whatever the connection's search_path.
      await client.query(`SET LOCAL search_path TO ${q}`);
      const version = step.action === 'create' ? BASELINE_VERSION : found + 1;
      await client.query(step.action === 'create' ? BASELINE : (MIGRATIONS[step.index] ?? ''));
      await client.query(`INSERT INTO ${q}.schema_migrations (version) VALUES ($1)`, [version]);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    }
  }
}

/** Refuses a store this build cannot bring to its schema: a newer one, a development build's, a damaged one. */
export function refuseVersion(
  step: SchemaStep,
  found: number,
  schema: string,
  where: string,
): asserts step is Extract<SchemaStep, { action: 'create' | 'migrate' | 'current' }> {
  if (step.action === 'newer')
    throw new StoreError(
      `the store at ${where} has schema version ${found}, newer than this build knows ` +
        `(${latestSchemaVersion(MIGRATIONS.length)}); upgrade changefeed`,
    );
  if (step.action === 'prerelease')
    throw new PrereleaseSchemaError(
      where,
      found,
      'keep running the build that made it, or start afresh in a new schema (store.schema) or after ' +
        `DROP SCHEMA "${schema}" CASCADE (every sink then starts from now and logs from watch.startFrom)`,
    );
  if (step.action === 'unknown')
    throw new StoreError(`the store at ${where} ${unknownVersionProblem(found)}; ${damagedRemedy(schema)}`);
}

/**
 * A schema without a store version that already holds tables or views (another application's,
 * or `store.schema: public`) is not taken: the baseline would stop at the first name they share
 * with "relation already exists", or, where none is shared, mix the store into their schema.
 */
async function refuseForeignRelations(client: pg.ClientBase, schema: string, location: string): Promise<void> {
  const { rows } = await client.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND c.relname <> 'schema_migrations'
      ORDER BY c.relname LIMIT 6`,
    [schema],
  );
  if (rows.length === 0) return;
  const names = rows.slice(0, 5).map((r) => r.name);
  throw new StoreError(
    `the schema ${schema} at ${location} holds no changefeed store but other tables (${names.join(', ')}` +
      `${rows.length > 5 ? ', ...' : ''}); set store.schema to a schema of the store's own (created if missing)`,
  );
}

/**
 * A store at this build's version must hold this build's tables (schemaVersion.ts, missingTables):
 * one catalog query when a store opens.
 */
export async function checkTables(
  client: pg.ClientBase,
  schema: string,
  where: string,
  version: number,
): Promise<void> {
  const { rows } = await client.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind IN ('r', 'p')`,
    [schema],
  );
  const missing = missingTables(
    TABLES,
    rows.map((r) => r.name),
  );
  if (missing.length > 0)
    throw new StoreError(`the store at ${where} ${missingTablesProblem(version, missing)}; ${damagedRemedy(schema)}`);
}

/** What an operator can do with a damaged store on PostgreSQL. */
function damagedRemedy(schema: string): string {
  return (
    'restore it from a backup, or start afresh in a new schema (store.schema) or after ' +
    `DROP SCHEMA "${schema}" CASCADE (every sink then starts from now and logs from watch.startFrom)`
  );
}
