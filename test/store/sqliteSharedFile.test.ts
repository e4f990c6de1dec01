import { copyFileSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it, vi } from 'vitest';
import { legacyTenantNames, type MovedTenant } from '../../src/store/sqlite/legacyTenantFile.js';
import { SqliteStoreBackend } from '../../src/store/sqlite/sqliteStoreBackend.js';
import { storeConfigSchema } from '../../src/store/storeConfig.js';
import { makeTempDir } from '../support/tempDir.js';
import { V5_T, writeVersionFiveStore } from '../support/versionFiveStore.js';
import { expectTenantsKeptApart } from './contract/tenantIsolation.js';
import { entry, entryIdsInJournal, ingest } from './contract/storeFixtures.js';
import { openSqliteStoreFile } from '../support/sqliteStoreFile.js';

function backendIn(stateDir: string, options: ConstructorParameters<typeof SqliteStoreBackend>[1] = {}) {
  return new SqliteStoreBackend({ stateDir, store: storeConfigSchema.parse({}) }, options);
}

describe('the SQLite store keeps the tenants of a process in one file', () => {
  it('keeps two tenants of one file apart', async () => {
    const backend = backendIn(makeTempDir());
    await expectTenantsKeptApart(await backend.tenantStore('one'), await backend.tenantStore('two'));
    await backend.close();
  });

  it('gives every tenant the one connection and prepares each statement once for all of them', async () => {
    const backend = backendIn(makeTempDir());
    const first = backend.openNow('t-0');
    await first.sinks.activate([{ name: 'a', type: 'file' }], V5_T);
    await ingest(first, [entry('e-0')]);
    await first.outbox.pending('a', 0, 10);
    const prepare = vi.spyOn(first.db, 'prepare');
    for (let i = 1; i <= 50; i++) {
      const store = backend.openNow(`t-${i}`);
      expect(store.db).toBe(first.db);
      await store.sinks.activate([{ name: 'a', type: 'file' }], V5_T);
      await ingest(store, [entry(`e-${i}`)]);
      expect(await store.outbox.pending('a', 0, 10)).toHaveLength(1);
    }
    expect(prepare).not.toHaveBeenCalled();
    await backend.close();
  });

  it('upgrades a version-5 store: its rows become tenant default, positions and the journal head kept', async () => {
    const dir = makeTempDir();
    writeVersionFiveStore(join(dir, 'changefeed.sqlite'));
    const store = openSqliteStoreFile(join(dir, 'changefeed.sqlite'));
    expect(await store.journal.head()).toBe(3);
    expect(await store.journal.prunedThrough()).toBe(3);
    expect(await entryIdsInJournal(store)).toEqual(['e-1', 'e-2']);
    expect((await store.outbox.pending('a', 0, 10)).map((d) => d.seq)).toEqual([2]);
    expect(await store.outbox.counts('a')).toMatchObject({ pending: 1, delivered: 1 });
    expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({ windowEnd: V5_T + 5 });
    expect(await store.seen.seenAmong('career', 'c-1', ['e-3'])).toEqual(new Set(['e-3']));
    expect(await store.rates.list()).toHaveLength(1);
    expect(await store.quarantine.count()).toBe(1);
    expect((await store.sinks.list())[0]).toMatchObject({ name: 'a', connected: true });
    // A pruned position is never handed out again.
    await ingest(store, [entry('e-4')]);
    expect((await store.journal.page(3, 10)).events.map((e) => e.seq)).toEqual([4]);
    expect(store.db.pragma('foreign_key_check')).toEqual([]);
    expect(store.db.pragma('foreign_keys', { simple: true })).toBe(1);
    // Deleting an event still takes its deliveries with it.
    expect(await store.outbox.counts('a')).toMatchObject({ pending: 2 });
    store.db.prepare("DELETE FROM events WHERE tenant = 'default' AND seq = 2").run();
    expect(await store.outbox.counts('a')).toMatchObject({ pending: 1 });
    await store.close();
  });

  it('upgrades a version-5 store that lost its AUTOINCREMENT counter with the head at its highest seq', async () => {
    const dir = makeTempDir();
    const file = join(dir, 'changefeed.sqlite');
    writeVersionFiveStore(file);
    const raw = new Database(file);
    raw.prepare("DELETE FROM sqlite_sequence WHERE name = 'events'").run();
    raw.close();
    const store = openSqliteStoreFile(file);
    expect(await store.journal.head()).toBe(2);
    expect(await ingest(store, [entry('e-4')])).toMatchObject({ emitted: 1 });
    expect((await store.journal.page(2, 10)).events.map((e) => e.seq)).toEqual([3]);
    await store.close();
  });

  it('refuses to upgrade a store with a delivery whose event is gone, naming the table, and leaves it as it was', () => {
    const dir = makeTempDir();
    const file = join(dir, 'changefeed.sqlite');
    writeVersionFiveStore(file);
    const raw = new Database(file);
    raw.pragma('foreign_keys = OFF'); // as the sqlite3 shell has it
    raw.prepare('DELETE FROM events WHERE seq = 2').run();
    raw.close();
    expect(() => openSqliteStoreFile(file)).toThrow(
      /to schema version 6 left 1 rows without their parent: 1 in deliveries \(parent events\) .*nothing was changed/,
    );
    const after = new Database(file, { readonly: true });
    expect(after.pragma('user_version', { simple: true })).toBe(5);
    after.close();
  });
});

describe("a tenant's own file of an earlier build", () => {
  const legacyOf = (dir: string, tenant: string) => join(dir, 'tenants', tenant, 'changefeed.sqlite');

  it('is moved into the shared file once, with positions, deliveries and the head kept, and set aside', async () => {
    const dir = makeTempDir();
    writeVersionFiveStore(legacyOf(dir, 'acme'));
    const moved: MovedTenant[] = [];
    const backend = backendIn(dir, { onTenantMoved: (m) => moved.push(m) });
    const acme = backend.openNow('acme');
    expect(moved).toEqual([expect.objectContaining({ tenant: 'acme', from: legacyOf(dir, 'acme'), events: 2 })]);
    expect(existsSync(legacyOf(dir, 'acme'))).toBe(false);
    expect(readdirSync(join(dir, 'tenants', 'acme')).filter((f) => /\.moved-.*Z$/.test(f))).toHaveLength(1);
    expect(await acme.journal.head()).toBe(3);
    expect(await entryIdsInJournal(acme)).toEqual(['e-1', 'e-2']);
    expect(await acme.outbox.counts('a')).toMatchObject({ pending: 1, delivered: 1 });
    expect(await ingest(acme, [entry('e-2'), entry('e-5')])).toMatchObject({ emitted: 1 });
    expect((await acme.journal.page(3, 10)).events.map((e) => e.seq)).toEqual([4]);
    // Nothing of it went to any other tenant.
    expect(await backend.openNow('default').journalSize()).toBe(0);
    await backend.close();

    const again = backendIn(dir, { onTenantMoved: (m) => moved.push(m) });
    expect(await again.openNow('acme').journalSize()).toBe(3);
    expect(moved).toHaveLength(1);
    await again.close();
  });

  it('found again after a crash between the move and setting it aside is set aside, not copied twice', async () => {
    const dir = makeTempDir();
    writeVersionFiveStore(legacyOf(dir, 'acme'));
    const backend = backendIn(dir);
    backend.openNow('acme');
    await backend.close();
    const [kept] = readdirSync(join(dir, 'tenants', 'acme')).filter((f) => /\.moved-.*Z$/.test(f));
    copyFileSync(join(dir, 'tenants', 'acme', kept!), legacyOf(dir, 'acme'));

    const moved: MovedTenant[] = [];
    const reopened = backendIn(dir, { onTenantMoved: (m) => moved.push(m) });
    expect(await reopened.openNow('acme').journalSize()).toBe(2);
    expect(moved).toEqual([expect.objectContaining({ tenant: 'acme', events: 0 })]);
    expect(existsSync(legacyOf(dir, 'acme'))).toBe(false);
    await reopened.close();
  });

  it('is refused, and left where it is, when the tenant already has another history in the shared file', async () => {
    const dir = makeTempDir();
    const backend = backendIn(dir);
    await backend.openNow('acme').sinks.activate([{ name: 'a', type: 'file' }], V5_T);
    await backend.close();
    writeVersionFiveStore(legacyOf(dir, 'acme'));
    const again = backendIn(dir);
    expect(() => again.openNow('acme')).toThrow(/tenant acme has rows in .* and a file of its own .*refusing to merge/);
    expect(existsSync(legacyOf(dir, 'acme'))).toBe(true);
    await again.close();
  });

  it('found again after the move with another history (an earlier build run since) is refused, not set aside', async () => {
    const dir = makeTempDir();
    writeVersionFiveStore(legacyOf(dir, 'acme'));
    const backend = backendIn(dir);
    backend.openNow('acme');
    await backend.close();
    const earlier = openSqliteStoreFile(legacyOf(dir, 'acme'));
    await ingest(earlier, [entry('after-downgrade')]);
    await earlier.close();

    const again = backendIn(dir);
    expect(() => again.openNow('acme')).toThrow(
      /tenant acme was moved into .* from its own file .*tenants\/acme\/changefeed\.sqlite at .*another history.*refusing to merge/,
    );
    expect(existsSync(legacyOf(dir, 'acme'))).toBe(true);
    await again.close();
  });

  it('is refused, and left where it is, when it holds rows of other tenants than default', async () => {
    const dir = makeTempDir();
    const elsewhere = makeTempDir();
    const shared = backendIn(elsewhere);
    await ingest(shared.openNow('default'), [entry('d-1')]);
    await ingest(shared.openNow('zeta'), [entry('z-1')]);
    await shared.close();
    mkdirSync(join(dir, 'tenants', 'acme'), { recursive: true });
    copyFileSync(join(elsewhere, 'changefeed.sqlite'), legacyOf(dir, 'acme'));

    const backend = backendIn(dir);
    expect(() => backend.openNow('acme')).toThrow(
      /the file .*tenants\/acme\/changefeed\.sqlite of tenant acme holds rows of other tenants too \(zeta\)/,
    );
    expect(existsSync(legacyOf(dir, 'acme'))).toBe(true);
    expect(await backend.openNow('default').journalSize()).toBe(0);
    await backend.close();
  });

  it('is left where it is by a command that writes the store, which holds no lock', async () => {
    const dir = makeTempDir();
    backendIn(dir).openNow('default');
    writeVersionFiveStore(legacyOf(dir, 'acme'));
    const command = backendIn(dir, { mustExist: true });
    expect(() => command.openNow('acme')).toThrow(
      /tenant acme is still in its own file .*start the daemon of this build once/,
    );
    expect(existsSync(legacyOf(dir, 'acme'))).toBe(true);
    await command.close();
  });

  it('is left where it is when the disk fills during the move, the error naming the files and the problem', async () => {
    const dir = makeTempDir();
    writeVersionFiveStore(legacyOf(dir, 'acme'));
    const legacy = new Database(legacyOf(dir, 'acme'));
    legacy.prepare("UPDATE events SET payload = json_set(payload, '$.data', ?) WHERE seq = 2").run('x'.repeat(100_000));
    legacy.close();
    const backend = backendIn(dir);
    const db = backend.openNow('default').db;
    // The shared file cannot grow: as a full disk.
    db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true }) as number}`);
    expect(() => backend.openNow('acme')).toThrow(
      /moving tenant acme's own file .*tenants\/acme\/changefeed\.sqlite into .*changefeed\.sqlite failed \(database or disk is full, SQLITE_FULL\); nothing of it was moved/,
    );
    expect(existsSync(legacyOf(dir, 'acme'))).toBe(true);
    db.pragma('max_page_count = 1073741823');
    const acme = backend.openNow('acme');
    expect(await entryIdsInJournal(acme)).toEqual(['e-1', 'e-2']);
    expect(await acme.journal.head()).toBe(3);
    await backend.close();
  });

  it('is looked for only under directories named as tenants (a copy kept as acme.bak is not one)', () => {
    const dir = makeTempDir();
    writeVersionFiveStore(legacyOf(dir, 'acme'));
    writeVersionFiveStore(legacyOf(dir, 'acme.bak'));
    writeVersionFiveStore(legacyOf(dir, 'Zeta'));
    expect(legacyTenantNames(join(dir, 'changefeed.sqlite'))).toEqual(['acme']);
  });

  it('damaged, is refused with advice for it alone, not --reset-store, which would reset every tenant', () => {
    const dir = makeTempDir();
    backendIn(dir).openNow('default');
    mkdirSync(join(dir, 'tenants', 'acme'), { recursive: true });
    writeFileSync(legacyOf(dir, 'acme'), 'not a database, not even close to one');
    const backend = backendIn(dir);
    let message = '';
    try {
      backend.openNow('acme');
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(
      /tenant acme's own file .*tenants\/acme\/changefeed\.sqlite, from an earlier build, is not a SQLite database .*refusing to move it/,
    );
    expect(message).toMatch(/not run --reset-store, which sets aside .*, the store of every tenant/);
    expect(message).not.toMatch(/start over with `changefeed run --reset-store`/);
    expect(existsSync(legacyOf(dir, 'acme'))).toBe(true);
  });

  it('is named to a command that reads the store, which cannot move it', async () => {
    const dir = makeTempDir();
    backendIn(dir).openNow('default');
    writeVersionFiveStore(legacyOf(dir, 'acme'));
    const reader = backendIn(dir, { readonly: true, mustExist: true });
    expect(() => reader.openNow('acme')).toThrow(
      /tenant acme is still in its own file .*start the daemon of this build once/,
    );
    expect(() => reader.openNow('zeta')).toThrow(/tenant zeta has nothing in the store/);
    await reader.close();
  });
});
