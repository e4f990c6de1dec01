import { mkdirSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../support/manualClock.js';
import { loadMainConfig } from '../../src/config/mainConfig.js';
import { readTenants } from '../../src/config/readTenants.js';
import type { TenantConfig } from '../../src/config/tenantConfigSchema.js';
import { SqliteStoreBackend } from '../../src/store/sqlite/sqliteStoreBackend.js';
import { storeConfigSchema } from '../../src/store/storeConfig.js';
import { TenantsWatcher, type TenantsReport } from '../../src/tenants/tenantsWatcher.js';
import { makeTempDir } from '../support/tempDir.js';

type Report = TenantsReport<TenantConfig>;

const watchers: TenantsWatcher<TenantConfig>[] = [];
const backends: SqliteStoreBackend[] = [];
afterEach(async () => {
  await Promise.all(watchers.splice(0).map((w) => w.stop()));
  await Promise.all(backends.splice(0).map((b) => b.close()));
});

/** A tenants directory and a main config pointing at it; `start` runs a watcher whose reports queue up. */
function setup() {
  const root = makeTempDir();
  const dir = join(root, 'tenants');
  mkdirSync(dir);
  const mainFile = join(root, 'changefeed.yaml');
  writeFileSync(
    mainFile,
    [
      'api: { baseUrl: https://skills.example.com }',
      'sinks: [{ name: out, type: stdout }]',
      `tenants: { dir: ${dir} }`,
    ].join('\n'),
  );
  const source = loadMainConfig({ file: mainFile, env: {} }).tenants;
  const write = (name: string, key: string, extra = ''): void =>
    writeFileSync(join(dir, `${name}.yaml`), `api: { apiKey: ${key} }\n${extra}`);

  const reports: Report[] = [];
  const waiting: ((report: Report) => void)[] = [];
  /** The next report not yet taken: resolves when the watcher reports, never after a fixed sleep. */
  const nextReport = (): Promise<Report> => {
    const ready = reports.shift();
    return ready ? Promise.resolve(ready) : new Promise((resolve) => waiting.push(resolve));
  };
  const start = (
    options: { clock?: ManualClock; fileEvents?: boolean; rescanMs?: number; debounceMs?: number } = {},
  ) => {
    // The tenant records of a SQLite store, as the daemon settles each read against them.
    const backend = new SqliteStoreBackend({ stateDir: root, store: storeConfigSchema.parse({}) });
    backends.push(backend);
    const records = backend.tenantRecords();
    const watcher = new TenantsWatcher<TenantConfig>({
      dir,
      load: (previous) =>
        records.settle((stored) => {
          const settled = readTenants(source, previous, stored);
          return { result: settled, changes: settled.changes };
        }),
      onReport: (report) => {
        const waiter = waiting.shift();
        if (waiter) waiter(report);
        else reports.push(report);
      },
      onError: (error) => {
        throw error;
      },
      rescanMs: options.rescanMs ?? 3_600_000,
      debounceMs: options.debounceMs ?? 30,
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.fileEvents === undefined ? {} : { fileEvents: options.fileEvents }),
    });
    watchers.push(watcher);
    return watcher;
  };
  return { root, dir, write, start, nextReport, pending: () => reports.length };
}

const names = (report: Pick<Report, 'tenants'>) => report.tenants.map((t) => t.name);

describe('TenantsWatcher', () => {
  it('reports the first read, then adds, changes and removes tenants as files change (fs.watch)', async () => {
    const t = setup();
    t.write('acme', 'key-acme-0001');
    const watcher = t.start();
    expect(names(await watcher.start())).toEqual(['acme']);
    expect((await t.nextReport()).diff.added).toEqual(['acme']);

    t.write('globex', 'key-globex-0001');
    const added = await t.nextReport();
    expect(added.diff).toEqual({ added: ['globex'], changed: [], removed: [] });

    t.write('acme', 'key-acme-0001', 'watch: { concurrency: 3 }\n');
    const changed = await t.nextReport();
    expect(changed.diff.changed).toEqual(['acme']);
    expect(changed.tenants.find((x) => x.name === 'acme')?.config.watch.concurrency).toBe(3);

    unlinkSync(join(t.dir, 'globex.yaml'));
    const removed = await t.nextReport();
    expect(removed.diff.removed).toEqual(['globex']);
    expect(names(removed)).toEqual(['acme']);
  });

  it('reads a burst of writes once, after it goes quiet', async () => {
    const t = setup();
    // The debounce is far longer than the gaps between the writes, so even a loaded machine
    // sees one burst; without it the first notification would be read before the last write.
    await t.start({ debounceMs: 1000 }).start();
    await t.nextReport();
    for (const name of ['a', 'b', 'c', 'd', 'e']) {
      t.write(name, `key-${name}-0001`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const burst = await t.nextReport();
    expect(burst.diff.added).toEqual(['a', 'b', 'c', 'd', 'e']);
    // Writing the same content again changes nothing, so nothing more is reported.
    t.write('e', 'key-e-0001');
    t.write('f', 'key-f-0001');
    expect((await t.nextReport()).diff.added).toEqual(['f']);
    expect(t.pending()).toBe(0);
  });

  it('rescans on its clock without any notification (a ConfigMap mount that sends none)', async () => {
    const t = setup();
    const clock = new ManualClock();
    await t.start({ clock, fileEvents: false, rescanMs: 5000 }).start();
    expect((await t.nextReport()).tenants).toEqual([]);

    t.write('acme', 'key-acme-0001');
    await clock.advance(4999);
    expect(t.pending()).toBe(0);
    await clock.advance(1);
    expect((await t.nextReport()).diff.added).toEqual(['acme']);

    // A ConfigMap update: a new timestamped folder, then `..data` swapped by a rename.
    const version = join(t.dir, '..2026_11_24_15_00_00.000000001');
    mkdirSync(version);
    writeFileSync(join(version, 'acme.yaml'), 'api: { apiKey: key-acme-0002 }\n');
    rmSync(join(t.dir, 'acme.yaml'));
    symlinkSync('..2026_11_24_15_00_00.000000001', join(t.dir, '..data_tmp'));
    renameSync(join(t.dir, '..data_tmp'), join(t.dir, '..data'));
    symlinkSync(join('..data', 'acme.yaml'), join(t.dir, 'acme.yaml'));
    await clock.advance(5000);
    const swapped = await t.nextReport();
    expect(swapped.diff.changed).toEqual(['acme']);
    expect(swapped.tenants[0]?.config.api.apiKey).toBe('key-acme-0002');
  });

  it('keeps every tenant running while the directory is gone, and reports it until it is back', async () => {
    const t = setup();
    const clock = new ManualClock();
    t.write('acme', 'key-acme-0001');
    await t.start({ clock, rescanMs: 5000 }).start();
    await t.nextReport();

    renameSync(t.dir, `${t.dir}-moved`);
    await clock.advance(5000);
    const gone = await t.nextReport();
    expect(names(gone)).toEqual(['acme']);
    expect(gone.diff).toEqual({ added: [], changed: [], removed: [] });
    expect(gone.problems.map((p) => p.code)).toEqual(['TENANTS_DIR_UNREADABLE']);

    renameSync(`${t.dir}-moved`, t.dir);
    await clock.advance(5000);
    const back = await t.nextReport();
    expect(names(back)).toEqual(['acme']);
    expect(back.problems).toEqual([]);
  });

  it('reports an invalid file, keeps its running tenant, and reports again when it is fixed', async () => {
    const t = setup();
    t.write('acme', 'key-acme-0001');
    await t.start().start();
    await t.nextReport();

    t.write('acme', 'key-acme-0001', 'watch: { concurrency: 99 }\n');
    const broken = await t.nextReport();
    expect(broken.diff).toEqual({ added: [], changed: [], removed: [] });
    expect(broken.problems.map((p) => [p.code, p.tenant])).toEqual([['CONFIG_INVALID', 'acme']]);
    expect(broken.problems[0]?.message).toContain('keeps running with its last valid configuration');

    t.write('acme', 'key-acme-0001', 'watch: { concurrency: 4 }\n');
    const fixed = await t.nextReport();
    expect(fixed.diff.changed).toEqual(['acme']);
    expect(fixed.problems).toEqual([]);
  });

  it('stops idempotently, and reads nothing afterwards', async () => {
    const t = setup();
    const clock = new ManualClock();
    const watcher = t.start({ clock, rescanMs: 5000 });
    await watcher.start();
    await t.nextReport();
    await Promise.all([watcher.stop(), watcher.stop()]);
    t.write('acme', 'key-acme-0001');
    await clock.advance(60_000);
    expect(t.pending()).toBe(0);
    expect(clock.nextWakeAt()).toBeUndefined();
  });
});
