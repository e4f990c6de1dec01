import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createApiKeyProvider } from '../../src/api/apiKeyProvider.js';
import { systemClock } from '../../src/clock.js';
import { appConfigSchema } from '../../src/config/appConfigSchema.js';
import { createServiceClient } from '../../src/daemon/serviceConnection.js';
import { noopLogger } from '../../test/support/noopLogger.js';
import { ReadBudget } from '../../src/poll/readBudget.js';
import { ServerClock } from '../../src/poll/serverClock.js';
import { LAST_DISCOVERY_KEY, WatchRegistry } from '../../src/poll/watchRegistry.js';
import { startSimulator } from '../../src/simulator/index.js';
import { storePath } from '../../src/store/sqlite/database.js';
import type { BenchRow } from '../benchTable.js';
import { openSqliteStoreFile } from '../../test/support/sqliteStoreFile.js';

const ROOT = join(import.meta.dirname, '..', '..');
/** The budget's default pace: 900 reads an hour, one every 4 seconds. */
const PACE_MS = 3_600_000 / 900;

const seconds = (ms: number): string => (ms / 1000).toFixed(2);

/**
 * Discovery of a large company, in process: the real service client and WatchRegistry list
 * 5,000 careers and 1,000 skills by pages of 200 from the simulator over loopback HTTP into a
 * fresh store. The key's bucket is lifted so the figure is the work, not the wait: a real run
 * spends the same pages at the budget's pace, which the row adds.
 */
export async function largeDiscoveryRow(dir: string): Promise<BenchRow> {
  const simulator = await startSimulator({ careers: 5_000, skills: 1_000, historyHours: 0, readsPerHour: 1e6 });
  const config = appConfigSchema.parse({
    api: { baseUrl: simulator.url, apiKey: simulator.apiKey },
    watch: { careers: { discover: true }, skills: { discover: true } },
    budget: { readsPerHour: 1e6 },
    sinks: [{ name: 'file', type: 'file', path: join(dir, 'events.jsonl') }],
    stateDir: dir,
  });
  const store = openSqliteStoreFile(storePath(dir));
  let requests = 0;
  const serverClock = new ServerClock(systemClock);
  const client = createServiceClient(config, {
    apiKey: createApiKeyProvider(config.api),
    clock: systemClock,
    logger: noopLogger,
    budget: new ReadBudget(config.budget, systemClock),
    serverClock,
    onResponse: () => requests++,
  });
  const registry = new WatchRegistry({
    client,
    store,
    serverClock,
    clock: systemClock,
    watch: config.watch,
    logger: noopLogger,
  });
  try {
    const cpu = process.cpuUsage();
    const started = performance.now();
    const { added } = await registry.discover();
    const wallMs = performance.now() - started;
    const used = process.cpuUsage(cpu);
    return {
      case: 'discovery (in process, bucket lifted)',
      'logs or pages': `${added.toLocaleString('en-US')} logs, ${requests} pages`,
      'wall s': seconds(wallMs),
      'CPU s': seconds((used.user + used.system) / 1000),
      'at 900 reads/h, s': seconds(wallMs + (requests - 1) * PACE_MS),
    };
  } finally {
    await client.close();
    await store.close();
    await simulator.close();
  }
}

/**
 * `changefeed plan --no-discover` and `changefeed status`, the compiled CLI (`npm run build`), on
 * a store holding 6,001 watched logs and their learned rates (the adaptive day's). Each is run a
 * few times and the least CPU kept (and the shortest wall time); `changefeed --version` `changefeed help` gives Node's own start for comparison.
 */
export async function largeCommandRows(stateDir: string, configDir: string): Promise<BenchRow[]> {
  const store = openSqliteStoreFile(storePath(stateDir));
  await store.setMeta(LAST_DISCOVERY_KEY, String(Date.now()));
  const logs = (await store.watchedLogs.list()).length;
  await store.close();
  const configPath = join(configDir, 'changefeed.json');
  writeFileSync(
    configPath,
    JSON.stringify({
      stateDir,
      api: { baseUrl: 'http://127.0.0.1:9', apiKey: 'unused' },
      watch: { careers: { discover: true }, skills: { discover: true } },
      // No daemon answers here: status reports the recorded sink state.
      http: { port: 9 },
      sinks: [{ name: 'file', type: 'file', path: join(configDir, 'events.jsonl') }],
    }),
  );
  // CPU of the child as /usr/bin/time reports it: on a busy machine the wall time says more about the neighbours.
  const run = (args: string[]): { ms: number; cpuMs: number; bytes: number } => {
    let best = { ms: Infinity, cpuMs: Infinity, bytes: 0 };
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      const out = spawnSync(
        '/usr/bin/time',
        ['-f', 'cpu %U %S', process.execPath, join(ROOT, 'bin/changefeed.js'), ...args],
        {
          cwd: ROOT,
          env: { ...process.env, CHANGEFEED_CONFIG: '' },
          encoding: 'utf8',
          maxBuffer: 1 << 28,
        },
      );
      if (out.status !== 0) throw new Error(`changefeed ${args.join(' ')} failed: ${out.stderr}`);
      const ms = performance.now() - started;
      const [user = NaN, system = NaN] = (/cpu ([\d.]+) ([\d.]+)\s*$/.exec(out.stderr)?.slice(1) ?? []).map(Number);
      const cpuMs = 1000 * (user + system);
      if (cpuMs < best.cpuMs) best = { ms: Math.min(ms, best.ms), cpuMs, bytes: Buffer.byteLength(out.stdout) };
      else best.ms = Math.min(ms, best.ms);
    }
    return best;
  };
  const row = (name: string, args: string[]): BenchRow => {
    const { ms, cpuMs, bytes } = run(args);
    return {
      case: name,
      'logs or pages': args[0] === 'help' ? '' : `${logs.toLocaleString('en-US')} logs`,
      'wall s': seconds(ms),
      'CPU s': seconds(cpuMs),
      'output KiB': Math.round(bytes / 1024),
    };
  };
  return [
    row('changefeed help (Node start alone)', ['help']),
    row('changefeed plan --no-discover', ['plan', '--no-discover', '--config', configPath]),
    row('changefeed plan --json --no-discover', ['plan', '--json', '--no-discover', '--config', configPath]),
    row('changefeed status', ['status', '--config', configPath]),
    row('changefeed status --json', ['status', '--json', '--config', configPath]),
  ];
}
