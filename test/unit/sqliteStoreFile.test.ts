import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { StoreError } from '../../src/store/sqlite/database.js';
import { MIGRATIONS } from '../../src/store/sqlite/migrations.js';
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
  await store.watchedLogs.register({
    log: 'career',
    objectId: 'c-1',
    origin: 'config',
    coverageStart: T - HOUR,
    now: T,
  });
  return { file, store };
}

/** What only the SQLite store has: its file, WAL and schema versions (the contract is test/store/). */
describe('opening the SQLite store', () => {
  it('migrates a new file to the latest schema version', async () => {
    const { store } = await openFresh();
    expect(store.db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    expect(store.db.pragma('journal_mode', { simple: true })).toBe('wal');
    await store.close();
  });

  it('reopens an existing file without migrating again and keeps its contents', async () => {
    const { store, file } = await openFresh();
    await ingest(store, [entry('e-1')]);
    await store.setMeta('discovery.completedAt', '123');
    await store.close();
    const reopened = openSqliteStoreFile(file);
    expect(reopened.db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    expect(await entryIdsInJournal(reopened)).toEqual(['e-1']);
    expect(await reopened.getMeta('discovery.completedAt')).toBe('123');
    expect(await ingest(reopened, [entry('e-1')])).toMatchObject({ emitted: 0, duplicates: 1 });
    await reopened.close();
  });

  it('gives the logs of a version-6 store a first-poll deadline at their creation: due at once, never pushed back', async () => {
    const file = join(makeTempDir(), 'v6.sqlite');
    const raw = new Database(file);
    for (const sql of MIGRATIONS.slice(0, 6)) raw.exec(sql);
    raw.pragma('user_version = 6');
    raw
      .prepare("INSERT INTO watched_logs (tenant, log, object_id, origin, created_at) VALUES ('default', ?, ?, ?, ?)")
      .run('career', 'c-1', 'config', T);
    raw.close();
    const store = openSqliteStoreFile(file);
    expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({ createdAt: T, firstPollBy: T });
    await store.close();
  });

  it('upgrades learned rates of a version-3 store: counts kept, every change taken as its own session', async () => {
    const file = join(makeTempDir(), 'v3.sqlite');
    const raw = new Database(file);
    for (const sql of MIGRATIONS.slice(0, 3)) raw.exec(sql);
    raw.pragma('user_version = 3');
    raw
      .prepare(
        'INSERT INTO rate_estimates (log, object_id, events, hours, burst, updated_at) VALUES (?, ?, ?, ?, ?, ?)',
      )
      .run('career', 'c-1', 7.5, 20, 3, T);
    raw.close();
    const store = openSqliteStoreFile(file);
    const rows = await store.rates.list();
    expect(rows).toEqual([
      expect.objectContaining({
        log: 'career',
        objectId: 'c-1',
        events: 7.5,
        sessions: 7.5,
        hours: 20,
        lastEventAt: null,
        updatedAt: T,
      }),
    ]);
    await store.close();
  });

  it('refuses a store written by a newer version', async () => {
    const { store, file } = await openFresh();
    await store.close();
    const raw = new Database(file);
    raw.pragma(`user_version = ${MIGRATIONS.length + 1}`);
    raw.close();
    expect(() => openSqliteStoreFile(file)).toThrow(StoreError);
    expect(() => openSqliteStoreFile(file)).toThrow(/newer than this build knows.*upgrade changefeed/);
  });
});
