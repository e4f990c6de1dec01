import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { FATAL_MESSAGE } from '../../src/cli/fatalErrors.js';
import { eventIdFor } from '../../src/events/eventId.js';
import type { Simulator } from '../../src/simulator/index.js';
import { storePath } from '../../src/store/sqlite/database.js';
import { deliveredEvents, duplicatesOf } from '../support/daemonHarness.js';
import { freePort, startDaemonProcess, until, type DaemonProcess } from '../support/daemonProcess.js';
import { connectPostgres, dropSchema, POSTGRES_PORT } from '../support/postgresAdmin.js';
import { skipOrFail } from '../support/requiredBinary.js';
import { makeTempDir } from '../support/tempDir.js';
import { startTcpProxy } from '../support/tcpProxy.js';
import { startTestSimulator } from '../support/testSimulator.js';

// A store that refuses while the daemon runs killed the process, every tenant with it: an
// uncaught `role "..." is not permitted to log in` after NOLOGIN and terminated backends, and an
// uncaught `SqliteError: database is locked` at WatchedLogs.recordFailure while another process
// held the file. Both must pause polling and delivery, say so in /readyz, and resume by themselves.

const connected = await connectPostgres();
const admin = 'client' in connected ? connected.client : undefined;
skipOrFail('the refused-login test of a PostgreSQL store', 'reason' in connected ? connected.reason : undefined);

let daemon: DaemonProcess | undefined;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  if (daemon && daemon.child.exitCode === null && daemon.child.signalCode === null) {
    daemon.child.kill('SIGKILL');
    await daemon.exited();
  }
  daemon = undefined;
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  await admin?.end();
});

interface Readiness {
  status: number;
  checks: { name: string; ok: boolean; detail?: string }[];
}

async function readyz(port: number): Promise<Readiness | undefined> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(20_000) });
    const body = (await response.json()) as { checks: Readiness['checks'] };
    return { status: response.status, checks: body.checks };
  } catch {
    return undefined;
  }
}

async function simulatorWithOneCareer(seed: number): Promise<{ simulator: Simulator; career: string }> {
  const simulator = await startTestSimulator({
    seed,
    careers: 1,
    skills: 0,
    identityProviderShare: 0,
    eventsPerHour: 0,
    historyHours: 0,
    readsPerHour: 10_000_000,
  });
  return { simulator, career: simulator.careerIds[0]! };
}

/** Entries appended to the career now, as the event ids the daemon must deliver. */
function appendRound(simulator: Simulator, career: string, count: number): string[] {
  const now = Date.now();
  return simulator
    .appendBurst('career', career, count, { from: now - 2_000, to: now - 1_000 })
    .map((e) => eventIdFor('career', career, e.id));
}

function writeConfig(dir: string, simulator: Simulator, port: number, store: string[]): string {
  const file = join(dir, 'changefeed.yaml');
  writeFileSync(
    file,
    [
      `api: { baseUrl: "${simulator.url}" }`,
      'watch: { careers: { discover: true }, identityProviderEvents: false, pollIntervalSeconds: 0.5, ' +
        `startFrom: "${new Date(Date.now() - 3_600_000).toISOString()}", ` +
        'schedule: { firstPollWithinSeconds: 0, historyHours: 0 } }',
      'budget: { readsPerHour: 36000000, reserve: 0 }',
      `stateDir: ${join(dir, 'state')}`,
      `http: { port: ${port} }`,
      ...store,
      `sinks: [{ name: out, type: file, path: ${join(dir, 'events.jsonl')} }]`,
    ].join('\n'),
  );
  return file;
}

function delivered(dir: string): string[] {
  try {
    return deliveredEvents(dir).map((e) => e.id);
  } catch {
    return [];
  }
}

/** Fails with the daemon's last log lines, which say what it was doing. */
async function waitFor(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 90_000): Promise<void> {
  const running = daemon!;
  const alive = async (): Promise<boolean> => {
    if (running.child.exitCode !== null) throw new Error(`the daemon exited (${running.child.exitCode})`);
    return check();
  };
  await until(alive, timeoutMs, what).catch((error: Error) => {
    throw new Error(`${error.message}; the daemon's last log lines:\n${running.logs().slice(-3000)}`);
  });
}

function expectAlive(): void {
  expect(daemon!.logs()).not.toContain(FATAL_MESSAGE);
  expect(daemon!.logs()).not.toMatch(/uncaught|unhandled/i);
  expect(daemon!.child.exitCode).toBeNull();
}

/**
 * A daemon on a PostgreSQL schema of a role of its own (which a test then refuses), delivering a
 * simulated career's first entries to a file: returned once they are delivered.
 */
async function daemonOnOwnRole(seed: number) {
  const { simulator, career } = await simulatorWithOneCareer(seed);
  const suffix = randomBytes(5).toString('hex');
  const role = `cf_test_role_${suffix}`;
  const schema = `cf_test_${suffix}`;
  await admin!.query(`CREATE ROLE ${role} LOGIN`);
  await admin!.query(`GRANT CONNECT, CREATE ON DATABASE test TO ${role}`);
  await admin!.query(`CREATE SCHEMA ${schema} AUTHORIZATION ${role}`);
  cleanups.push(async () => {
    await admin!.query(`ALTER ROLE ${role} NOLOGIN`);
    await admin!.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [role]);
    await dropSchema(admin!, schema);
    await admin!.query(`DROP OWNED BY ${role}`);
    await admin!.query(`DROP ROLE ${role}`);
  });
  const dir = makeTempDir();
  const port = await freePort();
  const written = appendRound(simulator, career, 5);
  const url = `postgres://${role}@127.0.0.1:${POSTGRES_PORT}/test`;
  daemon = startDaemonProcess(
    [
      '--config',
      writeConfig(dir, simulator, port, [
        `store: { url: "${url}", schema: ${schema}, maxConnections: 4 }`,
        'cluster: { leaseSeconds: 6 }',
      ]),
    ],
    { CHANGEFEED_API_KEY: simulator.apiKey },
  );
  await waitFor(() => new Set(delivered(dir)).size >= written.length, 'the first entries delivered');
  return { simulator, career, role, dir, port, written };
}

describe('a store that refuses while the daemon runs', () => {
  it('SQLite held by another process past the busy timeout: pauses, reports the lock, resumes after COMMIT', async () => {
    const { simulator, career } = await simulatorWithOneCareer(81);
    const dir = makeTempDir();
    const port = await freePort();
    const written = appendRound(simulator, career, 5);
    daemon = startDaemonProcess(['--config', writeConfig(dir, simulator, port, [])], {
      CHANGEFEED_API_KEY: simulator.apiKey,
    });
    await waitFor(() => new Set(delivered(dir)).size >= written.length, 'the first entries delivered');

    const holder = new Database(storePath(join(dir, 'state')));
    cleanups.push(() => {
      holder.close();
      return Promise.resolve();
    });
    holder.exec('BEGIN EXCLUSIVE');
    written.push(...appendRound(simulator, career, 5));
    let store: Readiness['checks'][number] | undefined;
    await waitFor(async () => {
      store = (await readyz(port))?.checks.find((c) => c.name === 'store');
      return store?.ok === false;
    }, 'readiness reporting the locked store');
    expect(store?.detail).toMatch(/locked by another process/);
    expectAlive();

    holder.exec('COMMIT');
    await waitFor(() => new Set(delivered(dir)).size >= written.length, 'every entry delivered after COMMIT');
    await waitFor(async () => (await readyz(port))?.status === 200, '/readyz 200 again');
    expect(new Set(delivered(dir))).toEqual(new Set(written));
    expect(duplicatesOf(delivered(dir))).toEqual([]);
    expectAlive();
  }, 240_000);

  it.skipIf(!admin)(
    'PostgreSQL refusing the login (NOLOGIN, backends terminated): stays up, unready, and delivers again after LOGIN',
    async () => {
      const { simulator, career, role, dir, port, written } = await daemonOnOwnRole(82);

      await admin!.query(`ALTER ROLE ${role} NOLOGIN`);
      await admin!.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [role]);
      written.push(...appendRound(simulator, career, 5));
      let refused: Readiness | undefined;
      await waitFor(async () => {
        refused = await readyz(port);
        return refused?.status === 503 && JSON.stringify(refused.checks).includes('not permitted to log in');
      }, 'readiness reporting the refused login');
      // Until the leases failed to renew too: by then every loop has met the refusal.
      await waitFor(
        () => daemon!.logs().includes('tenant leases could not be renewed'),
        'the lease keeper meeting the refusal',
      );
      expectAlive();

      await admin!.query(`ALTER ROLE ${role} LOGIN`);
      await waitFor(() => new Set(delivered(dir)).size >= written.length, 'every entry delivered after LOGIN');
      await waitFor(async () => (await readyz(port))?.status === 200, '/readyz 200 again');
      expect(new Set(delivered(dir))).toEqual(new Set(written));
      expectAlive();
    },
    240_000,
  );

  // A read-only session keeps refusing writes for its life: its connections, given back to the
  // pool after each 25006, kept the daemon paused after the database took writes again.
  it.skipIf(!admin)(
    'PostgreSQL made read-only (default_transaction_read_only, as a failover to a standby): pauses, reports it, resumes once writable',
    async () => {
      const { simulator, career, role, dir, port, written } = await daemonOnOwnRole(84);

      // Every new session read-only, the sessions there now ended: as after a failover to a standby.
      await admin!.query(`ALTER ROLE ${role} SET default_transaction_read_only = on`);
      await admin!.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [role]);
      written.push(...appendRound(simulator, career, 5));
      await waitFor(
        async () => JSON.stringify((await readyz(port))?.checks ?? []).includes('is read-only'),
        'readiness reporting the read-only database',
      );
      expectAlive();

      // Writable again for every new session; the daemon's sessions are not ended this time.
      await admin!.query(`ALTER ROLE ${role} RESET default_transaction_read_only`);
      await waitFor(
        () => new Set(delivered(dir)).size >= written.length,
        'every entry delivered once the database took writes again',
        60_000,
      );
      await waitFor(async () => (await readyz(port))?.status === 200, '/readyz 200 again');
      expect(new Set(delivered(dir))).toEqual(new Set(written));
      expect(duplicatesOf(delivered(dir))).toEqual([]);
      expectAlive();
    },
    240_000,
  );

  // The disableLog write of a 404 was unguarded: refused, its rejection went unhandled and the
  // log was polled again every 20 ms.
  it.skipIf(!admin)(
    'a 404 while PostgreSQL is away: no escaped error, the gone log is not polled in a hot loop, and it is dropped once the store is back',
    async () => {
      const { simulator, career } = await simulatorWithOneCareer(83);
      const schema = `cf_test_${randomBytes(5).toString('hex')}`;
      cleanups.push(() => dropSchema(admin!, schema));
      const proxy = await startTcpProxy(POSTGRES_PORT);
      cleanups.push(() => proxy.close());
      const dir = makeTempDir();
      const port = await freePort();
      const written = appendRound(simulator, career, 3);
      const url = `postgres://postgres@127.0.0.1:${proxy.port}/test`;
      daemon = startDaemonProcess(
        [
          '--config',
          writeConfig(dir, simulator, port, [
            `store: { url: "${url}", schema: ${schema}, maxConnections: 4 }`,
            // Long enough that the tenant keeps its lease through the outage below.
            'cluster: { leaseSeconds: 90 }',
          ]),
        ],
        { CHANGEFEED_API_KEY: simulator.apiKey },
      );
      await waitFor(() => new Set(delivered(dir)).size >= written.length, 'the first entries delivered');

      await proxy.stop();
      await waitFor(
        async () => (await readyz(port))?.checks.some((c) => c.name === 'store' && !c.ok) ?? false,
        'the store reported away',
      );
      const deletedAt = Date.now();
      simulator.deleteObject('career', career);
      const goneReads = () =>
        simulator.requests.filter((r) => r.status === 404 && r.path.includes(career) && r.at >= deletedAt);
      // Twice: the pause between two reads is what a hot loop lacks; each more costs 5 s.
      await waitFor(() => goneReads().length >= 2, 'the gone career read twice during the outage');
      expectAlive();
      const times = goneReads().map((r) => r.at);
      // Every poll waits for the store (5 s) after a refused write, instead of one every 20 ms.
      for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(4_000);

      await proxy.start();
      await waitFor(() => daemon!.logs().includes('no longer watched'), 'the gone career dropped');
      const afterDrop = goneReads().length;
      await waitFor(async () => (await readyz(port))?.status === 200, '/readyz 200 again');
      expect(goneReads().length).toBeLessThanOrEqual(afterDrop + 1);
      expectAlive();
    },
    240_000,
  );
});
