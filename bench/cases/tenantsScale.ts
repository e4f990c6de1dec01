import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { BenchRow } from '../benchTable.js';
import { writeCompanyTenants } from './companyTenants.js';
import { cpuSeconds, freePort, memoryMiB, sumMetricWhere, sumMetrics } from './processProbe.js';

const ROOT = join(import.meta.dirname, '..', '..');
const POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/test';
const COUNTERS = [
  'changefeed_api_requests_total',
  'changefeed_api_rate_limited_total',
  'changefeed_polls_total',
  'changefeed_entries_ingested_total',
  'changefeed_deliveries_total',
  'changefeed_store_transactions_total',
  'changefeed_store_statements_total',
  'changefeed_store_pool_waits_total',
  'changefeed_store_pool_wait_seconds_total',
  'changefeed_store_pool_busy_total',
] as const;

const MAX_START_MS = Number(process.env.BENCH_MAX_START_SECONDS ?? 900) * 1000;
/** Scrapes of /metrics timed one after another once the measurement ends (BENCH_SCRAPES to change). */
const SCRAPES = Number(process.env.BENCH_SCRAPES ?? 5);
/** The daemon's `api.timeoutMs`: longer than the simulator is paused for the timed scrapes. */
const PAUSED_SIMULATOR_TIMEOUT_MS = 300_000;
/** How long the simulator is paused before the daemon's idle CPU is taken: every tenant's poll then waits on it. */
const SETTLE_MS = 8_000;
const IDLE_SAMPLE_MS = 3_000;

function runningTenants(metricsText: string): number {
  return Number(/^changefeed_tenants\{state="running"\} (\d+)$/m.exec(metricsText)?.[1] ?? 0);
}

export interface TenantsScaleOptions {
  readonly tenants: number;
  readonly store: 'sqlite' | 'postgres';
  /** Real seconds from the daemon's start before measuring (discovery and first polls). */
  readonly warmUpSeconds: number;
  readonly measureSeconds: number;
  /** Changes per hour per company in the simulator. */
  readonly eventsPerHour: number;
}

/** Real seconds the one-tenant daemon runs after its tenant started, before its RSS is taken. */
const ONE_TENANT_WARM_UP_SECONDS = 15;

/** `changefeed simulate --companies N` (compiled CLI, its own process): its URL and each company's key. */
async function startSimulator(
  companies: number,
  eventsPerHour: number,
): Promise<{ child: ChildProcess; url: string; keys: string[] }> {
  const args = ['simulate', '--port', '0', '--companies', String(companies), '--careers', '20', '--skills', '5'];
  const child = spawn(
    process.execPath,
    [join(ROOT, 'bin/changefeed.js'), ...args, '--events-per-hour', String(eventsPerHour)],
    {
      cwd: ROOT,
      env: { ...process.env, CHANGEFEED_CONFIG: '' },
      stdio: ['ignore', 'pipe', 'ignore'],
    },
  );
  let out = '';
  child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  const keys = (): string[] => [...out.matchAll(/^company \d+ CHANGEFEED_API_KEY=(\S+)$/gm)].map((m) => m[1] ?? '');
  while (keys().length < companies) {
    if (child.exitCode !== null) throw new Error('changefeed simulate exited early');
    await sleep(50);
  }
  return { child, url: /^CHANGEFEED_BASE_URL=(\S+)$/m.exec(out)?.[1] ?? '', keys: keys() };
}

/** The main config and one tenant file per company, each tenant with a file sink of its own. */
function writeConfig(
  dir: string,
  url: string,
  keys: readonly string[],
  store: string,
  port: number,
  instanceId: string,
): string {
  const tenantsDir = writeCompanyTenants(dir, keys);
  const config = join(dir, 'changefeed.yaml');
  writeFileSync(
    config,
    [
      `stateDir: "${join(dir, 'state')}"`,
      // The requests the paused simulator holds while the scrapes are timed (timedScrapes) must not
      // time out meanwhile: 15 s, the default, is shorter than ten scrapes of a loaded machine.
      `api: { baseUrl: "${url}", timeoutMs: ${PAUSED_SIMULATOR_TIMEOUT_MS} }`,
      'watch: { careers: { discover: true }, skills: { discover: true }, identityProviderEvents: true }',
      ...(store === '' ? [] : [store]),
      `http: { port: ${port} }`,
      `tenants: { dir: "${tenantsDir}" }`,
      // Names the daemon's connections in pg_stat_activity, so the bench finds its backends.
      `cluster: { instanceId: "${instanceId}" }`,
      'log: { level: warn }',
    ].join('\n'),
  );
  return config;
}

/**
 * One daemon process (`node dist/cli/changefeed.js run`, `npm run build` first) serving N tenants
 * against the many-company simulator (its own process), each tenant at its default budget of 900
 * reads an hour with 20 careers, 5 skills and the identity-provider log. After a warm-up it
 * measures for a period of real time: the daemon's RSS (sampled, and its peak VmHWM), CPU seconds
 * per hour, requests and 429s from /metrics, and what they cost the store: transactions and
 * statements (changefeed_store_*_total, counted by the daemon) per request, poll and delivered
 * event. On PostgreSQL also the database's side: its xact_commit delta (every client of the
 * database) and the CPU of the backends serving the daemon (pg_stat_activity by the daemon's
 * application_name, /proc/<pid>/stat) beside all postgres processes' CPU. What a tenant costs is
 * `KB per tenant`: RSS after warm-up less that of the same daemon serving one tenant (run first,
 * briefly), over the other tenants. The simulator's own RSS and cores are printed beside, as it
 * shares the machine. Last, what a /metrics scrape costs the daemon (timedScrapes): its duration,
 * its CPU and its size.
 */
export async function tenantsScale(options: TenantsScaleOptions): Promise<BenchRow> {
  const dir = mkdtempSync(join(tmpdir(), 'cf-tenants-scale-'));
  // BENCH_SCHEMA_PREFIX: engineers sharing one database tell their schemas (and backends) apart.
  const schema = `${process.env.BENCH_SCHEMA_PREFIX ?? 'cf_bench'}_${randomBytes(6).toString('hex')}`;
  const admin = options.store === 'postgres' ? new pg.Client({ connectionString: POSTGRES_URL }) : undefined;
  const simulator = await startSimulator(options.tenants, options.eventsPerHour);
  let daemon: ChildProcess | undefined;
  let stderr = '';
  try {
    await admin?.connect();
    const port = await freePort();
    // BENCH_STORE_MAX_CONNECTIONS: store.maxConnections of the measured daemon (its default otherwise).
    const maxConnections = process.env.BENCH_STORE_MAX_CONNECTIONS;
    const pool = maxConnections === undefined ? '' : `, maxConnections: ${Number(maxConnections)}`;
    const store = options.store === 'postgres' ? `store: { url: "${POSTGRES_URL}", schema: ${schema}${pool} }` : '';
    const config = writeConfig(dir, simulator.url, simulator.keys, store, port, schema);
    const oneTenantRss = await oneTenantDaemonRssMiB(
      join(dir, 'one-tenant'),
      simulator,
      options.store === 'postgres' ? `store: { url: "${POSTGRES_URL}", schema: ${schema}_one }` : '',
      `${schema}_one`,
    );
    daemon = startDaemon(config);
    // BENCH_DAEMON_STDERR: a file that keeps all the daemon said (the row shows its last 4,000 characters).
    const stderrFile = process.env.BENCH_DAEMON_STDERR;
    if (stderrFile !== undefined) writeFileSync(stderrFile, '');
    daemon.stderr?.on('data', (c: Buffer) => {
      stderr = (stderr + c.toString()).slice(-4000);
      if (stderrFile !== undefined) appendFileSync(stderrFile, c);
    });
    const pid = daemon.pid as number;
    const metrics = async (): Promise<string> => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const commits = async (): Promise<number> =>
      admin === undefined
        ? 0
        : Number(
            (await admin.query<{ n: string }>("SELECT xact_commit AS n FROM pg_stat_database WHERE datname = 'test'"))
              .rows[0]?.n,
          );
    let maxRss = 0;
    const progress = progressPrinter(pid, admin, `changefeed ${schema}`);
    const sampleRss = (): void => {
      if (!running(daemon)) throw new Error(`daemon exited early: ${stderr}`);
      maxRss = Math.max(maxRss, memoryMiB(pid).rss);
    };
    // Warm-up: every tenant running (on PostgreSQL each is started once its lease is acquired),
    // then warmUpSeconds more for discovery and first polls.
    const started = Date.now();
    for (;;) {
      const text = await metrics().catch(() => '');
      const runningNow = runningTenants(text);
      await progress(runningNow, text);
      if (runningNow >= options.tenants) break;
      // What a start that does not finish looked like: how far it came and what the daemon warned.
      if (Date.now() - started > MAX_START_MS)
        throw new Error(
          `${runningNow} of ${options.tenants} tenants running after ${MAX_START_MS} ms; the daemon's last warnings:\n${stderr}`,
        );
      await sleep(1000);
      sampleRss();
    }
    const allRunningSeconds = (Date.now() - started) / 1000;
    for (let t = 0; t < options.warmUpSeconds; t++) {
      await sleep(1000);
      sampleRss();
      await progress(options.tenants);
    }
    const rssAfterWarmUp = maxRss;
    // The daemon's and its database's counts at one moment: the measurement is the difference of two.
    const snapshot = async () => ({
      cpu: cpuSeconds(pid),
      at: Date.now(),
      metrics: await metrics(),
      commits: await commits(),
      backends:
        admin === undefined ? new Map<number, number>() : await postgresBackendsCpu(admin, `changefeed ${schema}`),
      postgres: allPostgresCpu(),
    });
    const before = await snapshot();
    const simulatorCpuBefore = cpuSeconds(simulator.child.pid as number);
    for (let t = 0; t < options.measureSeconds; t++) {
      await sleep(1000);
      sampleRss();
      await progress(options.tenants);
    }
    const after = await snapshot();
    const seconds = (after.at - before.at) / 1000;
    const [b, a] = [sumMetrics(before.metrics, COUNTERS), sumMetrics(after.metrics, COUNTERS)];
    const delta = (name: (typeof COUNTERS)[number]): number => (a[name] ?? 0) - (b[name] ?? 0);
    const cpu = after.cpu - before.cpu;
    const requests = delta('changefeed_api_requests_total');
    const transactions = delta('changefeed_store_transactions_total');
    const statements = delta('changefeed_store_statements_total');
    const requests429 = sumMetricWhere(after.metrics, 'changefeed_api_requests_total', 'status="429"');
    const rateLimited = Math.max(a.changefeed_api_rate_limited_total ?? 0, requests429);
    const simulatorCpu = cpuSeconds(simulator.child.pid as number);
    const peakBeforeScrapes = memoryMiB(pid).peak;
    const scrape = await timedScrapes(pid, port, simulator.child);
    return {
      case: `${options.tenants.toLocaleString('en-US')} tenants, ${options.store === 'postgres' ? 'PostgreSQL' : 'SQLite'}`,
      'all running after s': Math.round(allRunningSeconds),
      'measured s': Math.round(seconds),
      'requests/s': requests / seconds,
      '429s (whole run)': rateLimited,
      'RSS after warm-up MiB': Math.round(rssAfterWarmUp),
      'one-tenant RSS MiB': Math.round(oneTenantRss),
      'KB per tenant': Math.round(((rssAfterWarmUp - oneTenantRss) * 1024) / Math.max(1, options.tenants - 1)),
      'RSS max MiB': Math.round(maxRss),
      'VmHWM MiB': Math.round(peakBeforeScrapes),
      'CPU s per hour': Math.round((cpu / seconds) * 3600),
      cores: cpu / seconds,
      'daemon CPU µs per request': (cpu * 1e6) / requests,
      'polls/s': delta('changefeed_polls_total') / seconds,
      'entries/s': delta('changefeed_entries_ingested_total') / seconds,
      'deliveries/s': delta('changefeed_deliveries_total') / seconds,
      'store tx/s': transactions / seconds,
      'tx per request': transactions / requests,
      'statements per request': statements / requests,
      'tx per poll': transactions / delta('changefeed_polls_total'),
      'tx per delivered event': transactions / delta('changefeed_deliveries_total'),
      // Waits for a connection of the store's full pool (PostgreSQL): how far store.maxConnections is from enough.
      'pool waits per tx': delta('changefeed_store_pool_waits_total') / transactions,
      'mean pool wait ms':
        (delta('changefeed_store_pool_wait_seconds_total') * 1000) /
        Math.max(1, delta('changefeed_store_pool_waits_total')),
      'STORE_BUSY (whole run)': a.changefeed_store_pool_busy_total ?? 0,
      'idle cores (simulator paused)': scrape.idleCores,
      'scrape s': scrape.seconds,
      'scrape CPU ms': scrape.cpuSeconds * 1000,
      'scrape CPU µs per tenant': (scrape.cpuSeconds * 1e6) / options.tenants,
      'scrape MB': scrape.bytes / 1e6,
      ...(admin === undefined
        ? {}
        : {
            'db commits/s (all clients)': (after.commits - before.commits) / seconds,
            'PostgreSQL cores (its backends)': cpuDelta(before.backends, after.backends) / seconds,
            'PostgreSQL cores (all its processes)': cpuDelta(before.postgres, after.postgres) / seconds,
            // The database's CPU per request: what a request costs it, whatever the load or the rate reached.
            'PostgreSQL CPU µs per request (its backends)':
              (cpuDelta(before.backends, after.backends) * 1e6) / requests,
          }),
      'simulator RSS MiB': Math.round(memoryMiB(simulator.child.pid as number).rss),
      'simulator cores': (simulatorCpu - simulatorCpuBefore) / seconds,
    };
  } finally {
    await stopDaemon(daemon);
    simulator.child.kill('SIGTERM');
    if (admin !== undefined) {
      for (const name of [schema, `${schema}_one`])
        await admin.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`).catch(() => undefined);
      await admin.end();
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * What one /metrics scrape costs the daemon, on an otherwise idle daemon: the simulator is paused
 * (SIGSTOP), so once every tenant's poll waits on it the daemon neither polls nor ingests; its CPU
 * at rest is sampled, then SCRAPES scrapes run one after another, each timed from its request to
 * its last byte, and their CPU less the rest's over the same time is the scrapes'. CPU seconds,
 * not only seconds: on a loaded machine a scrape's duration is mostly the scraper's turns to
 * read. The simulator goes on (SIGCONT) when they are done.
 */
async function timedScrapes(
  pid: number,
  port: number,
  simulator: ChildProcess,
): Promise<{ idleCores: number; seconds: number; cpuSeconds: number; bytes: number }> {
  simulator.kill('SIGSTOP');
  try {
    await sleep(SETTLE_MS);
    const idleFrom = { cpu: cpuSeconds(pid), at: performance.now() };
    await sleep(IDLE_SAMPLE_MS);
    const idleCores = (cpuSeconds(pid) - idleFrom.cpu) / ((performance.now() - idleFrom.at) / 1000);
    const cpuBefore = cpuSeconds(pid);
    const started = performance.now();
    let bytes = 0;
    for (let i = 0; i < SCRAPES; i++)
      bytes += Buffer.byteLength(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
    const seconds = (performance.now() - started) / 1000;
    const cpu = cpuSeconds(pid) - cpuBefore - idleCores * seconds;
    return { idleCores, seconds: seconds / SCRAPES, cpuSeconds: cpu / SCRAPES, bytes: bytes / SCRAPES };
  } finally {
    simulator.kill('SIGCONT');
  }
}

/**
 * The same daemon serving the first company alone (in `dir`, a store of its own), the baseline
 * the row's `KB per tenant` is reckoned from: its peak RSS over the first seconds of its tenant
 * running, as `RSS after warm-up` is of the full daemon.
 */
async function oneTenantDaemonRssMiB(
  dir: string,
  simulator: { url: string; keys: string[] },
  store: string,
  instanceId: string,
): Promise<number> {
  mkdirSync(dir);
  const port = await freePort();
  const daemon = startDaemon(writeConfig(dir, simulator.url, simulator.keys.slice(0, 1), store, port, instanceId));
  daemon.stderr?.resume();
  try {
    const pid = daemon.pid as number;
    let maxRss = 0;
    const started = Date.now();
    while (runningTenants(await fetchText(`http://127.0.0.1:${port}/metrics`)) < 1) {
      if (!running(daemon)) throw new Error('the one-tenant daemon exited early');
      if (Date.now() - started > MAX_START_MS) throw new Error(`its tenant not running after ${MAX_START_MS} ms`);
      await sleep(500);
    }
    for (let t = 0; t < ONE_TENANT_WARM_UP_SECONDS; t++) {
      await sleep(1000);
      maxRss = Math.max(maxRss, memoryMiB(pid).rss);
    }
    return maxRss;
  } finally {
    await stopDaemon(daemon);
  }
}

/** `node dist/cli/changefeed.js run --config <config>` with BENCH_DAEMON_NODE_ARGS, its stderr piped. */
function startDaemon(config: string): ChildProcess {
  // BENCH_DAEMON_NODE_ARGS: e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile the daemon.
  const nodeArgs = process.env.BENCH_DAEMON_NODE_ARGS?.split(' ').filter((a) => a !== '') ?? [];
  return spawn(process.execPath, [...nodeArgs, join(ROOT, 'dist/cli/changefeed.js'), 'run', '--config', config], {
    cwd: ROOT,
    env: { ...withoutStoreUrl(process.env), CHANGEFEED_CONFIG: '', CHANGEFEED_API_KEY: '' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
}

/** SIGTERM first (a profile is written on exit), SIGKILL if it has not stopped in 20 s. */
async function stopDaemon(daemon: ChildProcess | undefined): Promise<void> {
  if (daemon === undefined || !running(daemon)) return;
  const exited = new Promise((resolve) => daemon.once('exit', resolve));
  daemon.kill('SIGTERM');
  const force = setTimeout(() => daemon.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(force);
}

async function fetchText(url: string): Promise<string> {
  try {
    return await (await fetch(url)).text();
  } catch {
    return '';
  }
}

/**
 * Every 10 s a line on stderr: seconds since the daemon started, the machine's load average, the
 * tenants running, the daemon's RSS and cores, its PostgreSQL backends' cores and count over the
 * last 10 s, and while it starts the checkouts waiting for the store's pool and those given up
 * (STORE_BUSY): how a start went, beside the one row the bench ends with.
 */
function progressPrinter(
  pid: number,
  admin: pg.Client | undefined,
  applicationName: string,
): (runningNow: number, metricsText?: string) => Promise<void> {
  const started = Date.now();
  let last = { at: started, cpu: 0, backends: new Map<number, number>() };
  return async (runningNow, metricsText) => {
    const at = Date.now();
    if (at - last.at < 10_000) return;
    const cpu = cpuSeconds(pid);
    const backends =
      admin === undefined ? new Map<number, number>() : await postgresBackendsCpu(admin, applicationName);
    const seconds = (at - last.at) / 1000;
    const load = loadavg()
      .map((l) => l.toFixed(1))
      .join(' ');
    process.stderr.write(
      `${Math.round((at - started) / 1000)} s: load ${load}, running ${runningNow}, RSS ${Math.round(memoryMiB(pid).rss)} MiB, ` +
        `daemon ${((cpu - last.cpu) / seconds).toFixed(2)} cores, PostgreSQL ${backends.size} backends ` +
        `${(cpuDelta(last.backends, backends) / seconds).toFixed(2)} cores` +
        poolLine(metricsText) +
        '\n',
    );
    last = { at, cpu, backends };
  };
}

/** `, pool waiting N, STORE_BUSY N` from a scrape of the daemon; nothing without one. */
function poolLine(metricsText: string | undefined): string {
  if (metricsText === undefined) return '';
  const sums = sumMetrics(metricsText, ['changefeed_store_pool_waiting', 'changefeed_store_pool_busy_total']);
  return `, pool waiting ${sums.changefeed_store_pool_waiting}, STORE_BUSY ${sums.changefeed_store_pool_busy_total}`;
}

/**
 * CPU seconds so far of each PostgreSQL backend serving `applicationName` (the daemon's pools), by
 * pid. A backend that ends within the measurement takes its CPU with it: connections of a busy
 * pool live on, so the sum is near, and never above, what the daemon's backends used.
 */
async function postgresBackendsCpu(admin: pg.Client, applicationName: string): Promise<Map<number, number>> {
  const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [
    applicationName,
  ]);
  return processesCpu(rows.map((r) => r.pid));
}

/**
 * CPU seconds so far of every postgres process on this machine, by pid: the database's whole
 * work, for every client of it (other benches and tests on a shared machine included).
 */
function allPostgresCpu(): Map<number, number> {
  const pids = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres';
      } catch {
        return false;
      }
    });
  return processesCpu(pids.map(Number));
}

function processesCpu(pids: readonly number[]): Map<number, number> {
  const cpu = new Map<number, number>();
  for (const pid of pids) {
    try {
      cpu.set(pid, cpuSeconds(pid));
    } catch {
      // Ended since it was listed.
    }
  }
  return cpu;
}

/** CPU used between two samples by the processes of the second: a process new since the first counts whole. */
function cpuDelta(before: ReadonlyMap<number, number>, after: ReadonlyMap<number, number>): number {
  let sum = 0;
  for (const [pid, cpu] of after) sum += cpu - (before.get(pid) ?? 0);
  return sum;
}

/** Neither exited nor killed by a signal (a signal leaves exitCode null). */
function running(child: ChildProcess | undefined): boolean {
  return child !== undefined && child.exitCode === null && child.signalCode === null;
}

function withoutStoreUrl(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { CHANGEFEED_STORE_URL: _ignored, ...rest } = env;
  return rest;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// `npx tsx bench/cases/tenantsScale.ts [sqlite|postgres] [tenants] [warm-up s] [measured s]`
if (process.argv[1] === import.meta.filename) {
  const [store = 'sqlite', tenants = '1000', warmUp = '60', measure = '180'] = process.argv.slice(2);
  const { judged, printTable } = await import('../benchTable.js');
  const { scaleGoal } = await import('../benchSections.js');
  const engine = store === 'postgres' ? 'postgres' : 'sqlite';
  printTable('Scale: one process, many tenants', [
    judged(
      await tenantsScale({
        tenants: Number(tenants),
        store: engine,
        warmUpSeconds: Number(warmUp),
        measureSeconds: Number(measure),
        eventsPerHour: 60,
      }),
      scaleGoal(Number(tenants), engine),
    ),
  ]);
}
