import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/sqlite/database.js';
import { StoreError } from '../../src/store/storeError.js';
import { MIGRATIONS, TABLES } from '../../src/store/sqlite/migrations.js';
import { latestSchemaVersion, PrereleaseSchemaError } from '../../src/store/schemaVersion.js';
import { entry, entryIdsInJournal, HOUR, ingest, T } from '../store/contract/storeFixtures.js';
import { makeTempDir } from '../support/tempDir.js';
import { openSqliteStoreFile } from '../support/sqliteStoreFile.js';

async function openFresh(sinks: string[] = ['a']) {
  const file = join(makeTempDir(), 's.sqlite');
  const store = openSqliteStoreFile(file);
  await store.sinks.activate(
    sinks.map((name) => ({ name, type: 'file' })),
    T,
  );
  await store.watchedLogs.registerAll([
    { log: 'career', objectId: 'c-1', origin: 'config', coverageStart: T - HOUR, now: T },
  ]);
  return { file, store };
}

/** What only the SQLite store has: its file, WAL and schema versions (the contract is test/store/). */
describe('opening the SQLite store', () => {
  it('migrates a new file to the latest schema version', async () => {
    const { store } = await openFresh();
    expect(store.db.pragma('user_version', { simple: true })).toBe(latestSchemaVersion(MIGRATIONS.length));
    expect(store.db.pragma('journal_mode', { simple: true })).toBe('wal');
    await store.close();
  });

  it('reopens an existing file without migrating again and keeps its contents', async () => {
    const { store, file } = await openFresh();
    await ingest(store, [entry('e-1')]);
    await store.setMeta('discovery.completedAt', '123');
    await store.close();
    const reopened = openSqliteStoreFile(file);
    expect(reopened.db.pragma('user_version', { simple: true })).toBe(latestSchemaVersion(MIGRATIONS.length));
    expect(await entryIdsInJournal(reopened)).toEqual(['e-1']);
    expect(await reopened.getMeta('discovery.completedAt')).toBe('123');
    expect(await ingest(reopened, [entry('e-1')])).toMatchObject({ emitted: 0, duplicates: 1 });
    await reopened.close();
  });

  it('refuses a store of a development build before 1.0.0, naming its version and what to do, and leaves it as it was', () => {
    const file = join(makeTempDir(), 'dev.sqlite');
    const raw = new Database(file);
    raw.exec('CREATE TABLE watched_logs (log TEXT, object_id TEXT)');
    raw.pragma('user_version = 9');
    raw.close();
    for (const readonly of [false, true]) {
      const opening = () => openDatabase(file, { readonly });
      expect(opening).toThrow(PrereleaseSchemaError);
      expect(opening).toThrow(
        expect.objectContaining({
          code: 'STORE_SCHEMA_PRERELEASE',
          message: expect.stringMatching(
            /schema version 9, written by a development build before 1\.0\.0.*--reset-store/,
          ),
        }),
      );
    }
    const after = new Database(file, { readonly: true });
    expect(after.pragma('user_version', { simple: true })).toBe(9);
    after.close();
  });

  it.each([-1, -(2 ** 31)])(
    'refuses a store whose user_version %i no build writes as not a store of ours or damaged, and leaves it as it was',
    (version) => {
      const file = join(makeTempDir(), 'odd.sqlite');
      const raw = new Database(file);
      raw.exec('CREATE TABLE watched_logs (log TEXT, object_id TEXT)');
      raw.pragma(`user_version = ${version}`);
      raw.close();
      for (const readonly of [false, true]) {
        const opening = () => openDatabase(file, { readonly });
        expect(opening).toThrow(
          expect.objectContaining({
            code: 'STORE_REFUSED',
            message: expect.stringMatching(
              new RegExp(
                `has schema version ${version}, which no build of changefeed writes .*not a changefeed store, or it is damaged`,
              ),
            ),
          }),
        );
        expect(opening).not.toThrow(/development build/);
      }
      const after = new Database(file, { readonly: true });
      expect(after.pragma('user_version', { simple: true })).toBe(version);
      after.close();
    },
  );

  it('has exactly the tables that opening an existing store checks for', async () => {
    const { store, file } = await openFresh();
    await store.close();
    const raw = new Database(file, { readonly: true });
    const tables = raw.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all();
    raw.close();
    expect([...tables].sort()).toEqual([...TABLES].sort());
  });

  it('refuses a store at this version that lost tables, naming them, for the daemon and for readers', async () => {
    const { store, file } = await openFresh();
    await store.close();
    const raw = new Database(file);
    raw.exec('DROP TABLE deliveries; DROP TABLE sink_state');
    raw.close();
    for (const readonly of [false, true])
      expect(() => openDatabase(file, { readonly })).toThrow(
        expect.objectContaining({
          code: 'STORE_REFUSED',
          message: expect.stringMatching(
            new RegExp(
              `records schema version ${latestSchemaVersion(MIGRATIONS.length)} but lacks the tables deliveries, sink_state: it was damaged`,
            ),
          ),
        }),
      );
  });

  it('refuses a store written by a newer version', async () => {
    const { store, file } = await openFresh();
    await store.close();
    const raw = new Database(file);
    raw.pragma(`user_version = ${latestSchemaVersion(MIGRATIONS.length) + 1}`);
    raw.close();
    expect(() => openSqliteStoreFile(file)).toThrow(StoreError);
    expect(() => openSqliteStoreFile(file)).toThrow(/newer than this build knows.*upgrade changefeed/);
  });

  it('names a store locked by another process and what to do, not a full disk', async () => {
    const { store, file } = await openFresh();
    await store.close();
    // A sqlite3 shell holding the file: exclusive locking mode keeps even readers out.
    const shell = new Database(file);
    shell.pragma('locking_mode = EXCLUSIVE');
    shell.exec('BEGIN EXCLUSIVE');
    try {
      // After the store's busy timeout (5 s).
      expect(() => openDatabase(file)).toThrow(
        expect.objectContaining({
          code: 'STORE_UNAVAILABLE',
          message: expect.stringMatching(
            new RegExp(`^the store at ${file} is locked by another process: .*SQLITE_BUSY.*sqlite3 shell`),
          ),
        }),
      );
    } finally {
      shell.close();
    }
    openDatabase(file).close();
  });
});
