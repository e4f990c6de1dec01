import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ChangefeedStore } from '../../src/store/changefeedStore.js';
import type { SqliteChangefeedStore } from '../../src/store/sqlite/sqliteStore.js';
import { copySqliteToPostgres, countTenantRows } from '../../src/store/storeMigration.js';
import { runCliInProcess as runCli } from '../support/runCli.js';
import { POSTGRES_URL } from '../support/postgresAdmin.js';
import { makeTempDir } from '../support/tempDir.js';
import { entry, entryIdsInJournal, HOUR, ingest, quarantined, T } from './contract/storeFixtures.js';
import { SqliteStoreBackend } from '../../src/store/sqlite/sqliteStoreBackend.js';
import { storeConfigSchema } from '../../src/store/storeConfig.js';
import { admin, freshSchema, openBackend } from './postgresTestDb.js';
import { openSqliteStoreFile } from '../support/sqliteStoreFile.js';

/** A SQLite store with a bit of everything: cursors, delivered, pending and dead deliveries, rates, meta. */
async function busySqliteStore(): Promise<{ file: string; store: SqliteChangefeedStore }> {
  const file = join(makeTempDir(), 'changefeed.sqlite');
  const store = openSqliteStoreFile(file);
  await store.sinks.activate(
    [
      { name: 'a', type: 'file' },
      { name: 'b', type: 'webhook' },
    ],
    T,
  );
  await store.watchedLogs.registerAll([
    { log: 'career', objectId: 'c-1', origin: 'config', coverageStart: T - HOUR, now: T },
  ]);
  await store.watchedLogs.registerAll([
    { log: 'skill', objectId: 's-1', origin: 'discovered', coverageStart: T, now: T },
  ]);
  await ingest(store, [entry('e-1'), entry('e-2'), entry('e-3')], { quarantined: [quarantined('{"id":1}')] });
  await ingest(store, [entry('e-4')], { windowEnd: T + 1_000 });
  const [first, second] = await store.outbox.pending('a', 0, 10);
  await store.outbox.markDelivered('a', [first!.seq], T);
  await store.outbox.markDead('b', [{ seq: second!.seq, error: 'HTTP 400', status: 400, response: 'no' }], T);
  store.deferState({
    rates: [
      {
        log: 'career',
        objectId: 'c-1',
        events: 3,
        hours: 2,
        sessions: 1,
        lastEventAt: T,
        updatedAt: T,
        pollCost: 1.5,
        plannedRate: 0.5,
        nextPollAt: T + HOUR,
      },
    ],
  });
  await store.flushDeferred();
  await store.setMeta('discovery.lastCompletedAt', String(T));
  return { file, store };
}

/** Everything the contract shows of a store, to compare two of them. */
async function contents(store: ChangefeedStore) {
  return {
    watched: await store.watchedLogs.list(),
    pendingA: await store.outbox.pending('a', 0, 100),
    pendingB: await store.outbox.pending('b', 0, 100),
    countsA: await store.outbox.counts('a'),
    countsB: await store.outbox.counts('b'),
    dead: await store.deadLetters.list(),
    head: await store.journal.head(),
    page: await store.journal.page(0, 100),
    sinks: await store.sinks.list(),
    quarantine: await store.quarantine.list(),
    rates: await store.rates.list(),
    meta: await store.getMeta('discovery.lastCompletedAt'),
    size: await store.journalSize(),
  };
}

describe.skipIf(!admin)('store migrate: a SQLite store into a tenant of the PostgreSQL store', () => {
  it('copies every record with its journal positions, so nothing is delivered again and cursors hold', async () => {
    const { store } = await busySqliteStore();
    const backend = await openBackend();
    const report = await copySqliteToPostgres(store.db, backend, 'acme');
    expect(report.journalHead).toBe(4);
    const migrated = await backend.tenantStore('acme');
    expect(await contents(migrated)).toEqual(await contents(store));
    // The next event continues after the copied positions.
    await ingest(migrated, [entry('e-5')], { windowEnd: T + 2_000 });
    expect(await migrated.journal.head()).toBeGreaterThan(4);
    await store.close();
  });

  it('copies tables larger than one batch of rows whole', async () => {
    const { store } = await busySqliteStore();
    const many = Array.from({ length: 1_234 }, (_, i) => entry(`bulk-${i}`));
    await ingest(store, many, { windowEnd: T + 3_000 });
    const backend = await openBackend();
    const progress: number[] = [];
    await copySqliteToPostgres(store.db, backend, 'bulk', undefined, (rows) => progress.push(rows));
    expect(await contents(await backend.tenantStore('bulk'))).toEqual(await contents(store));
    // Told after every batch, rising to every row counted beforehand.
    expect(progress.length).toBeGreaterThan(2);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(progress.at(-1)).toBe(countTenantRows(store.db, 'default'));
    await store.close();
  });

  it('copies seen ids holding a NUL or U+FFFD so that the PostgreSQL store still tells them apart', async () => {
    const { store } = await busySqliteStore();
    await ingest(store, [entry('n\u0000-1'), entry('n\uFFFD-2')], { windowEnd: T + 3_000 });
    const backend = await openBackend();
    await copySqliteToPostgres(store.db, backend, 'odd');
    const migrated = await backend.tenantStore('odd');
    const asked = ['n\u0000-1', 'n\uFFFD-1', 'n\u0000-2', 'n\uFFFD-2'];
    expect(await migrated.seen.seenAmong('career', 'c-1', asked)).toEqual(new Set(['n\u0000-1', 'n\uFFFD-2']));
    expect(await ingest(migrated, [entry('n\u0000-1'), entry('n\uFFFD-1')], { windowEnd: T + 4_000 })).toMatchObject({
      emitted: 1,
      duplicates: 1,
    });
    await store.close();
  });

  it('refuses a tenant that already has data, and leaves it as it was', async () => {
    const { store } = await busySqliteStore();
    const backend = await openBackend();
    await copySqliteToPostgres(store.db, backend, 'acme');
    const before = await contents(await backend.tenantStore('acme'));
    await expect(copySqliteToPostgres(store.db, backend, 'acme')).rejects.toThrow(/already has data/);
    expect(await contents(await backend.tenantStore('acme'))).toEqual(before);
    await store.close();
  });

  it('as a command: refuses while a daemon holds the state directory, migrates once it is free', async () => {
    const { file, store } = await busySqliteStore();
    await store.close();
    const schema = freshSchema();
    const args = ['store', 'migrate', '--from', `sqlite:${file}`, '--to', POSTGRES_URL, '--schema', schema];
    const { StateDirLock } = await import('../../src/store/stateDirLock.js');
    const lock = StateDirLock.acquire(join(file, '..'));
    const refused = await runCli(args);
    lock.release();
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/STATE_DIR_LOCKED|another changefeed/i);
    const done = await runCli(args);
    // Not a terminal: one progress line at the end of a copy this small, and nothing else.
    expect(done.stderr).toMatch(/^store migrate default: (\d+)\/\1 rows \(100%\), done in \d+ s\n$/);
    expect(done.status).toBe(0);
    expect(done.stdout).toMatch(/migrated .* into tenant default \(.*events 4.*; journal head 4\)/);
  }, 60_000);

  it('as a command: moves every tenant of a shared file, each under its name', async () => {
    const dir = makeTempDir();
    const backend = new SqliteStoreBackend({ stateDir: dir, store: storeConfigSchema.parse({}) });
    for (const [tenant, ids] of [
      ['acme', ['e-1', 'e-2']],
      ['zeta', ['e-1']],
    ] as const) {
      const store = await backend.tenantStore(tenant);
      await store.sinks.activate([{ name: 'a', type: 'file' }], T);
      await store.watchedLogs.registerAll([
        { log: 'career', objectId: 'c-1', origin: 'config', coverageStart: T, now: T },
      ]);
      await ingest(
        store,
        ids.map((id) => entry(id)),
      );
    }
    await backend.close();
    const schema = freshSchema();
    const base = ['store', 'migrate', '--from', `sqlite:${join(dir, 'changefeed.sqlite')}`, '--to', POSTGRES_URL];

    const unknown = await runCli([...base, '--schema', schema, '--tenant', 'nope']);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/--tenant nope: the store holds no such tenant \(it holds acme, zeta\)/);

    const done = await runCli([...base, '--schema', schema]);
    // Copies shorter than 2 s: only the last progress line of each tenant.
    expect(
      done.stderr
        .trim()
        .split('\n')
        .map((line) => /^store migrate (\w+): (\d+)\/\2 rows/.exec(line)?.[1]),
    ).toEqual(['acme', 'zeta']);
    expect(done.stdout.trim().split('\n')).toEqual([
      expect.stringMatching(/\(tenant acme\) into tenant acme \(.*events 2.*; journal head 2\)$/),
      expect.stringMatching(/\(tenant zeta\) into tenant zeta \(.*events 1.*; journal head 1\)$/),
    ]);
    const target = await openBackend(schema);
    expect(await entryIdsInJournal(await target.tenantStore('zeta'))).toEqual(['e-1']);

    const again = await runCli([...base, '--schema', schema, '--tenant', 'zeta']);
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(/zeta already has data in the PostgreSQL store; nothing was copied/);
  }, 60_000);
  it('as a command: a tenant that fails is named, with those copied before it and those left to copy', async () => {
    const dir = makeTempDir();
    const backend = new SqliteStoreBackend({ stateDir: dir, store: storeConfigSchema.parse({}) });
    for (const tenant of ['acme', 'beta', 'zeta']) {
      const store = await backend.tenantStore(tenant);
      await store.sinks.activate([{ name: 'a', type: 'file' }], T);
      await store.watchedLogs.registerAll([
        { log: 'career', objectId: 'c-1', origin: 'config', coverageStart: T, now: T },
      ]);
      await ingest(store, [entry('e-1')]);
    }
    // A row PostgreSQL refuses (SQLite keeps any value in any column).
    (await backend.tenantStore('beta')).db
      .prepare("INSERT INTO rate_estimates (tenant, log, object_id, hours) VALUES ('beta', 'career', 'c-1', 'soon')")
      .run();
    await backend.close();
    const schema = freshSchema();
    const args = ['store', 'migrate', '--from', `sqlite:${join(dir, 'changefeed.sqlite')}`, '--to', POSTGRES_URL];

    const failed = await runCli([...args, '--schema', schema]);
    expect(failed.status).toBe(1);
    expect(failed.stdout).toMatch(/into tenant acme/);
    expect(failed.stderr).toMatch(
      /copying tenant beta into tenant beta failed, and nothing of it was copied: .*soon.*copied before it: acme; not copied: beta, zeta \(once the problem is fixed, run again with --tenant beta, then --tenant zeta\)/,
    );
    const again = await runCli([...args, '--schema', schema]);
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(
      /acme already has data .*nothing was copied .*; to copy the others, run again with --tenant beta, then --tenant zeta/,
    );
  }, 60_000);
  it('as a command: says so when the store holds no tenant, rather than nothing at all', async () => {
    const dir = makeTempDir();
    await new SqliteStoreBackend({ stateDir: dir, store: storeConfigSchema.parse({}) })
      .tenantStore('default')
      .then((s) => s.db.close());
    const schema = freshSchema();
    const done = await runCli([
      ...['store', 'migrate', '--from', `sqlite:${join(dir, 'changefeed.sqlite')}`, '--to', POSTGRES_URL],
      ...['--schema', schema],
    ]);
    expect(done.status).toBe(0);
    expect(done.stdout).toMatch(/changefeed\.sqlite holds no tenant: nothing to copy/);
  }, 60_000);
});
