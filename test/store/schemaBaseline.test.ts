import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { latestSchemaVersion } from '../../src/store/schemaVersion.js';
import { MIGRATIONS as POSTGRES_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { openDatabase, type Db } from '../../src/store/sqlite/database.js';
import { MIGRATIONS as SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { SqliteStoreBackend } from '../../src/store/sqlite/sqliteStoreBackend.js';
import { storeConfigSchema } from '../../src/store/storeConfig.js';
import type { StoreBackend } from '../../src/store/storeBackend.js';
import { connectPostgres } from '../support/postgresAdmin.js';
import { makeTempDir } from '../support/tempDir.js';
import { entryIdsInJournal } from './contract/storeFixtures.js';
import { RELEASE_SCHEMA } from './fixtures/dumpReleaseSchema.js';
import { admin, freshSchema, openBackend } from './postgresTestDb.js';

/**
 * Every release's store must reach this build's schema through the migrations, and end up as a
 * new store is: the baseline and every released migration are never edited, only appended to.
 * The fixtures are each release's schema as dumped on its commit (fixtures/dumpReleaseSchema.ts);
 * a release adds its own to RELEASES.
 */
const RELEASES = ['1.0.0'];
const fixture = (name: string) => readFileSync(join(import.meta.dirname, 'fixtures', name), 'utf8');

/** What a release's sample tenant holds (dumpReleaseSchema.ts), read back through this build's store. */
async function expectSampleRows(backend: StoreBackend): Promise<void> {
  const store = await backend.tenantStore('acme');
  expect(await entryIdsInJournal(store)).toEqual(['e-1', 'e-2']);
  expect(await store.outbox.counts('a')).toMatchObject({ pending: 1, delivered: 1 });
  expect(await store.quarantine.count()).toBe(1);
  expect(await store.getMeta('discovery.completedAt')).not.toBeUndefined();
}

/**
 * The SQLite schema as the engine reports it: tables (WITHOUT ROWID, STRICT), their columns in
 * order with type, NOT NULL, default and key position, indexes with their columns and condition,
 * foreign keys. SQLite reports no CHECK constraints apart from the table's text, which ALTER TABLE
 * rewrites; the store has none.
 */
function sqliteSchema(db: Db): unknown {
  const tables = db
    .prepare(
      "SELECT name, wr, strict FROM pragma_table_list WHERE schema = 'main' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )
    .all() as { name: string; wr: number; strict: number }[];
  return tables.map((table) => ({
    ...table,
    columns: db.prepare('SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_xinfo(?)').all(table.name),
    indexes: (
      db.prepare('SELECT name, "unique", origin, partial FROM pragma_index_list(?) ORDER BY name').all(table.name) as {
        name: string;
      }[]
    ).map((index) => ({
      ...index,
      columns: db.prepare('SELECT name, "desc", coll, key FROM pragma_index_xinfo(?)').all(index.name),
      // Keys have no statement of their own (sqlite_autoindex_*): their columns say it all.
      sql: (
        db.prepare("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?").get(index.name) as
          { sql: string | null } | undefined
      )?.sql?.replace(/\s+/g, ' '),
    })),
    foreignKeys: db
      .prepare('SELECT "table", "from", "to", on_update, on_delete, "match" FROM pragma_foreign_key_list(?)')
      .all(table.name),
  }));
}

/**
 * The PostgreSQL schema from the catalog: tables, columns in order with type, nullability,
 * default and identity, constraints (keys, foreign keys, checks) and indexes by definition, and
 * sequences, with the schema's own name taken out of every definition.
 */
async function postgresSchema(db: pg.ClientBase, schema: string): Promise<unknown> {
  const unqualified = (text: string) => text.replaceAll(`"${schema}".`, '').replaceAll(`${schema}.`, '');
  const rows = async (sql: string): Promise<Record<string, unknown>[]> =>
    (await db.query<Record<string, unknown>>(sql, [schema])).rows;
  return {
    columns: await rows(
      `SELECT table_name, column_name, ordinal_position, data_type, is_nullable, column_default, is_identity,
              identity_generation
         FROM information_schema.columns WHERE table_schema = $1 ORDER BY table_name, ordinal_position`,
    ),
    constraints: (
      await rows(
        `SELECT c.relname AS table_name, k.conname, k.contype, pg_get_constraintdef(k.oid) AS definition
           FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = $1 ORDER BY c.relname, k.conname`,
      )
    ).map((row) => ({ ...row, definition: unqualified(row.definition as string) })),
    indexes: (
      await rows(`SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = $1 ORDER BY indexname`)
    ).map((row) => ({ ...row, indexdef: unqualified(row.indexdef as string) })),
    sequences: await rows(
      `SELECT sequencename, data_type, start_value, min_value, max_value, increment_by, cycle
         FROM pg_sequences WHERE schemaname = $1 ORDER BY sequencename`,
    ),
  };
}

describe.each(RELEASES)('a SQLite store of release %s', (release) => {
  it("migrates to this build's schema, equal to a new store's, keeping its rows", async () => {
    const stateDir = makeTempDir();
    const released = new Database(join(stateDir, 'changefeed.sqlite'));
    released.exec(fixture(`sqlite-${release}.sql`));
    released.close();
    const backend = new SqliteStoreBackend({ stateDir, store: storeConfigSchema.parse({}) });
    await expectSampleRows(backend);
    await backend.close();

    const migrated = openDatabase(join(stateDir, 'changefeed.sqlite'));
    const created = openDatabase(join(makeTempDir(), 'changefeed.sqlite'));
    expect(migrated.pragma('user_version', { simple: true })).toBe(latestSchemaVersion(SQLITE_MIGRATIONS.length));
    expect(sqliteSchema(migrated)).toEqual(sqliteSchema(created));
    migrated.close();
    created.close();
  });
});

describe.skipIf(!admin).each(RELEASES)('a PostgreSQL store of release %s', (release) => {
  it("migrates to this build's schema, equal to a new store's, keeping its rows", async () => {
    const schema = freshSchema();
    // On a connection of its own: the dump empties its session's search_path.
    const loading = await connectPostgres();
    if (!('client' in loading)) throw new Error(loading.reason);
    try {
      await loading.client.query(fixture(`postgres-${release}.sql`).replaceAll(RELEASE_SCHEMA, schema));
    } finally {
      await loading.client.end();
    }
    await expectSampleRows(await openBackend(schema));
    const { rows } = await admin!.query<{ version: number }>(
      `SELECT MAX(version) AS version FROM "${schema}".schema_migrations`,
    );
    expect(rows[0]?.version).toBe(latestSchemaVersion(POSTGRES_MIGRATIONS.length));

    const created = freshSchema();
    await openBackend(created);
    expect(await postgresSchema(admin!, schema)).toEqual(await postgresSchema(admin!, created));
  });
});
