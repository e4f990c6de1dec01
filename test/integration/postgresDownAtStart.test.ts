import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { loadMainConfig } from '../../src/config/mainConfig.js';
import { ChangefeedDaemon } from '../../src/daemon/changefeedDaemon.js';
import { createLogger } from '../../src/observe/createLogger.js';
import type { Simulator } from '../../src/simulator/index.js';
import { deliveredEvents, expectedEventIds } from '../support/daemonHarness.js';
import { freePort, startDaemonProcess, until, type DaemonProcess } from '../support/daemonProcess.js';
import { runCliInProcess as runCli } from '../support/runCli.js';
import { connectPostgres, dropSchema, POSTGRES_PORT } from '../support/postgresAdmin.js';
import { skipOrFail } from '../support/requiredBinary.js';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy.js';
import { makeTempDir } from '../support/tempDir.js';
import { startTestSimulator } from '../support/testSimulator.js';
import { writeTenantFile } from '../support/tenantFile.js';

const connected = await connectPostgres();
const admin = 'client' in connected ? connected.client : undefined;
skipOrFail('tests of a PostgreSQL store down at start', 'reason' in connected ? connected.reason : undefined);

/** Trust auth ignores it; it is here to show that no log line or answer ever prints it. */
const PASSWORD = 'S3cretPW';
const COMPANIES = 3;

let daemon: ChangefeedDaemon | undefined;
let proxy: TcpProxy | undefined;
let child: DaemonProcess | undefined;
const schemas: string[] = [];
afterEach(async () => {
  await daemon?.stop();
  daemon = undefined;
  if (child && child.child.exitCode === null && child.child.signalCode === null) {
    child.child.kill('SIGKILL');
    await child.exited();
  }
  child = undefined;
  await proxy?.close();
  proxy = undefined;
  for (const schema of schemas.splice(0)) await dropSchema(admin!, schema);
});
afterAll(async () => {
  await admin?.end();
});

function freshSchema(): string {
  const schema = `cf_test_${randomBytes(6).toString('hex')}`;
  schemas.push(schema);
  return schema;
}

/** A proxy in front of the test database that refuses every connection until started again. */
async function refusingProxy(): Promise<TcpProxy> {
  proxy = await startTcpProxy(POSTGRES_PORT);
  await proxy.stop();
  return proxy;
}

const storeUrl = (port: number, database = 'test') => `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/${database}`;

/** Two new entries in the first career of every company, performed now. */
function writeRound(simulator: Simulator): void {
  for (const company of simulator.companies)
    company.appendEntries('career', company.careerIds[0]!, [{ event: 'level_added' }, { event: 'level_added' }]);
}

function missing(simulator: Simulator, dir: string): number {
  return simulator.companies.reduce((n, company, i) => {
    let delivered: Set<string>;
    try {
      delivered = new Set(deliveredEvents(dir, `company-${i}.jsonl`).map((e) => e.id));
    } catch {
      delivered = new Set();
    }
    return n + expectedEventIds(company).filter((id) => !delivered.has(id)).length;
  }, 0);
}

async function getJson(url: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** A config file for `changefeed` commands on a PostgreSQL store at `url`, no tenants directory. */
function writeConfig(dir: string, url: string, schema: string, httpPort?: number): string {
  const file = join(dir, 'changefeed.yaml');
  writeFileSync(
    file,
    [
      'api: { baseUrl: "http://127.0.0.1:9", apiKey: "key-not-used" }',
      `store: { url: "${url}", schema: ${schema} }`,
      `stateDir: ${join(dir, 'state')}`,
      ...(httpPort === undefined ? [] : [`http: { port: ${httpPort} }`]),
      `sinks: [{ name: out, type: file, path: ${join(dir, 'events.jsonl')} }]`,
    ].join('\n'),
  );
  return file;
}

describe.skipIf(!admin)('a PostgreSQL store that is down when the daemon starts', () => {
  it('stays alive and unready naming the database, retries, then leases and delivers everything once it is up', async () => {
    const simulator = await startTestSimulator({
      seed: 57,
      companies: COMPANIES,
      careers: 1,
      skills: 1,
      eventsPerHour: 0,
      historyHours: 0,
      readsPerHour: 1_000_000,
    });
    const dir = makeTempDir();
    const tenantsDir = join(dir, 'tenants');
    mkdirSync(tenantsDir);
    simulator.companies.forEach((company, i) =>
      writeTenantFile(tenantsDir, `company-${i}`, {
        apiKey: company.apiKey,
        sinkPath: join(dir, `company-${i}.jsonl`),
      }),
    );
    writeRound(simulator);
    const database = await refusingProxy();
    const schema = freshSchema();
    const httpPort = await freePort();
    const logs: string[] = [];
    const logger = createLogger({
      level: 'info',
      destination: new Writable({
        write(chunk: Buffer, _encoding, done) {
          logs.push(chunk.toString());
          done();
        },
      }),
    });
    const main = loadMainConfig({
      env: {},
      overrides: {
        'api.baseUrl': simulator.url,
        'watch.careers.discover': true,
        'watch.skills.discover': true,
        'watch.startFrom': '2000-01-01T00:00:00Z',
        'watch.pollIntervalSeconds': 1,
        'watch.schedule.firstPollWithinSeconds': 0,
        'budget.readsPerHour': 3_600_000,
        'budget.reserve': 0,
        stateDir: join(dir, 'state'),
        'tenants.dir': tenantsDir,
        'tenants.rescanSeconds': 1,
        'store.url': storeUrl(database.port),
        'store.schema': schema,
        'store.maxConnections': 4,
        'cluster.leaseSeconds': 6,
        'http.port': httpPort,
      },
    });
    daemon = new ChangefeedDaemon(main, { logger });
    const starting = daemon.start();
    const failedAttempts = () => logs.filter((l) => l.includes('the store cannot be opened yet')).length;
    await until(() => failedAttempts() >= 1, 30_000, 'a failed attempt to open the store');

    const base = `http://127.0.0.1:${httpPort}`;
    expect((await getJson(`${base}/healthz`)).status).toBe(200);
    const ready = await getJson(`${base}/readyz`);
    expect(ready.status).toBe(503);
    const checks = ready.body.checks as { name: string; ok: boolean; detail?: string }[];
    expect(checks).toHaveLength(1);
    expect(checks[0]).toMatchObject({ name: 'store', ok: false });
    expect(checks[0]!.detail).toMatch(
      new RegExp(
        `^PostgreSQL at postgres://<redacted>@127\\.0\\.0\\.1:${database.port}/test \\(schema ${schema}\\) is ` +
          'unreachable: .*ECONNREFUSED.*; retrying in \\d+ s \\(after attempt \\d+\\)$',
      ),
    );
    expect(simulator.requests).toHaveLength(0);

    // Then a server that takes connections and drops each at once: waited out the same way.
    database.cutNewConnections(true);
    await database.start();
    const storeDetail = () => daemon!.readiness().find((c) => c.name === 'store')?.detail ?? '';
    await until(() => storeDetail().includes('Connection terminated'), 30_000, 'an attempt cut by the server');
    expect(storeDetail()).toMatch(/is unreachable: Connection terminated.*; retrying in \d+ s \(after attempt \d+\)$/);
    expect(simulator.requests).toHaveLength(0);

    // Written while the database is down: delivered too once it is back.
    writeRound(simulator);
    database.cutNewConnections(false);
    await starting;
    await until(() => missing(simulator, dir) === 0, 60_000, 'every entry of every company delivered');
    await until(async () => (await getJson(`${base}/readyz`)).status === 200, 30_000, '/readyz 200');
    expect(new Set(simulator.requests.map((r) => r.company))).toEqual(new Set(simulator.companies.map((_, i) => i)));
    writeRound(simulator);
    await until(() => missing(simulator, dir) === 0, 60_000, 'the entries written after the start delivered');
    const text = logs.join('');
    expect(text).toContain('the store answered; opened it');
    expect(text).not.toContain(PASSWORD);
  }, 120_000);

  it('stops at once with exit 0 on SIGTERM while it waits for the database', async () => {
    const database = await refusingProxy();
    const dir = makeTempDir();
    const httpPort = await freePort();
    child = startDaemonProcess(['--config', writeConfig(dir, storeUrl(database.port), freshSchema(), httpPort)]);
    await child.waitForLog('the store cannot be opened yet', 30_000);
    const ready = await getJson(`http://127.0.0.1:${httpPort}/readyz`);
    expect(ready.status).toBe(503);
    expect(JSON.stringify(ready.body)).toMatch(/is unreachable: .*ECONNREFUSED.*retrying in/);
    const signalledAt = Date.now();
    child.child.kill('SIGTERM');
    expect(await child.exited()).toBe(0);
    // Well inside the 20 s shutdown timeout, which would exit 1.
    expect(Date.now() - signalledAt).toBeLessThan(5_000);
    expect(child.logs()).not.toContain(PASSWORD);
  }, 60_000);

  it('exits non-zero at once, naming the database and store.url, when the database does not exist', async () => {
    const dir = makeTempDir();
    const result = await runCli(['run', '--config', writeConfig(dir, storeUrl(POSTGRES_PORT, 'does_not_exist'), 'x')]);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(
      /STORE_ERROR: cannot open the store at postgres:\/\/<redacted>@127\.0\.0\.1:5432\/does_not_exist .*database "does_not_exist" does not exist; check store\.url/,
    );
    expect(result.stderr).not.toContain('the store cannot be opened yet');
    expect(result.stderr).not.toContain(PASSWORD);
  }, 60_000);

  it('keeps commands failing fast on an unreachable database, saying so', async () => {
    const database = await refusingProxy();
    const dir = makeTempDir();
    const config = writeConfig(dir, storeUrl(database.port), freshSchema());
    const results = await Promise.all([
      runCli(['run', '--once', '--config', config]),
      runCli(['status', '--config', config]),
      runCli(['tenants', 'list', '--config', config]),
    ]);
    for (const result of results) {
      expect(result.status, result.stderr).toBe(1);
      expect(result.stderr).toMatch(
        /STORE_UNAVAILABLE: PostgreSQL at postgres:\/\/<redacted>@127\.0\.0\.1:\d+\/test \(schema cf_test_\w+\) is unreachable: .*ECONNREFUSED.*check store\.url and that the database is up/,
      );
      expect(result.stderr).not.toContain(PASSWORD);
    }
  }, 60_000);
});
