import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventIdFor } from '../../src/events/eventId.js';
import type { ReceivedWebhook } from '../../src/receiver/webhookReceiver.js';
import { PostgresSink } from '../../src/sinks/postgresSink.js';
import { postgresSinkConfigSchema } from '../../src/sinks/postgresSinkConfig.js';
import { POSTGRES_URL } from '../support/postgresAdmin.js';
import { admin, freshSchema } from '../store/postgresTestDb.js';
import { startDaemonProcess, until, type DaemonProcess } from '../support/daemonProcess.js';
import { writeCliConfig } from '../support/cliConfig.js';
import { openSqliteStoreFile } from '../support/sqliteStoreFile.js';
import { makeTempDir } from '../support/tempDir.js';
import { startTestSimulator } from '../support/testSimulator.js';
import { receiver, SECRET } from '../support/webhookHarness.js';

const daemons: DaemonProcess[] = [];
afterEach(async () => {
  for (const daemon of daemons.splice(0))
    if (daemon.child.exitCode === null && daemon.child.signalCode === null) {
      daemon.child.kill('SIGKILL');
      await daemon.exited();
    }
});

function startDaemon(config: string, apiKey: string): DaemonProcess {
  // startDaemonProcess spawns node itself, not a wrapper: SIGKILL hits the daemon.
  const daemon = startDaemonProcess(['--config', config], { CHANGEFEED_API_KEY: apiKey });
  daemons.push(daemon);
  return daemon;
}

/** A daemon's failure to get somewhere, with its last log lines. */
const withLogs =
  (daemon: DaemonProcess) =>
  (error: Error): never => {
    throw new Error(`${error.message}; the daemon's last log lines:\n${daemon.logs().slice(-3000)}`);
  };

/** A simulator of one career whose log holds a burst of 5 entries from `from` (an hour ago), and their event ids. */
async function burstOnOneCareer(seed: number) {
  const simulator = await startTestSimulator({
    seed,
    careers: 1,
    skills: 0,
    identityProviderShare: 0,
    eventsPerHour: 0,
    historyHours: 0,
    readsPerHour: 10_000_000,
  });
  const careerId = simulator.careerIds[0] as string;
  const from = Date.now() - 3_600_000;
  const written = simulator
    .appendBurst('career', careerId, 5, { from, to: Date.now() - 2_000 })
    .map((e) => eventIdFor('career', careerId, e.id));
  return { simulator, written, from };
}

/**
 * Waits until the restarted `daemon` settled every delivery of `sink` (the event ids are known
 * before the restart, so "all delivered" is a fact of the store: nothing of the sink pending once
 * it caught up), and answers the sink's counts.
 */
async function untilSettled(dir: string, sink: string, events: number, daemon: DaemonProcess) {
  const store = openSqliteStoreFile(join(dir, 'state', 'changefeed.sqlite'), { readonly: true });
  try {
    await until(
      async () => {
        const counts = await store.outbox.counts(sink);
        return counts.delivered + counts.dead >= events && counts.pending === 0;
      },
      60_000,
      'every delivery of the sink settled after the restart',
    ).catch(withLogs(daemon));
    return await store.outbox.counts(sink);
  } finally {
    await store.close();
  }
}

// The kill in killAndRestart.test.ts rarely lands between the destination taking a batch and the
// store recording it, so a worker that recorded a batch before writing it passed there. Here the
// kill lands exactly there, every run: the receiver holds the first request open and the daemon
// is killed once that request has arrived.
describe('crash safety of a write in flight', () => {
  it('delivers again, with the same event id, the event whose webhook request was in flight when the daemon was killed with SIGKILL', async () => {
    const { simulator, written, from } = await burstOnOneCareer(37);

    let arrived: (request: ReceivedWebhook) => void = () => undefined;
    const firstArrived = new Promise<ReceivedWebhook>((resolve) => (arrived = resolve));
    let answerHeld: () => void = () => undefined;
    const held = new Promise<{ status: number }>((resolve) => (answerHeld = () => resolve({ status: 204 })));
    const hook = await receiver({
      onWebhook: (request) => arrived(request),
      // The first request is never answered while its daemon lives; every later one is, at once.
      respond: (_request, count) => (count === 1 ? held : { status: 204 }),
    });

    const dir = makeTempDir();
    const config = writeCliConfig(dir, simulator.url, {
      extra: [
        `watch: { careers: { discover: true }, identityProviderEvents: false, pollIntervalSeconds: 0.5, startFrom: "${new Date(from - 60_000).toISOString()}", schedule: { firstPollWithinSeconds: 0, historyHours: 0 } }`,
        'log: { level: info }',
      ],
      // The longest request time the sink allows: the held write is cut only by the kill.
      sinks: [`  - { name: hook, type: webhook, url: "${hook.url}", secret: "${SECRET}", timeoutMs: 300000 }`],
    });

    const first = startDaemon(config, simulator.apiKey);
    const inFlight = await firstArrived;
    first.child.kill('SIGKILL');
    await first.exited();
    answerHeld();
    expect(inFlight.verified).toBe(true);
    expect(written).toContain(inFlight.id);
    const beforeRestart = hook.count;

    const second = startDaemon(config, simulator.apiKey);
    expect(await untilSettled(dir, 'hook', written.length, second)).toMatchObject({
      pending: 0,
      delivered: written.length,
      dead: 0,
    });
    second.child.kill('SIGTERM');
    await second.exited();

    // The held event came again after the restart under the same id (the receiver's idempotency
    // key), signed and answered; other events may come twice, none may be missing.
    const afterRestart = hook.received.slice(beforeRestart);
    expect(afterRestart.filter((r) => r.verified).map((r) => r.id)).toContain(inFlight.id);
    expect(new Set(hook.received.slice(1).map((r) => r.id))).toEqual(new Set(written));
  }, 120_000);

  // A webhook batch holds one event, so a worker that recorded batches of several events before
  // writing them passed the test above; the PostgreSQL sink writes the whole burst in one INSERT.
  // A SHARE lock on its table holds that INSERT (reads and the sink's probe pass) until the kill.
  it.skipIf(!admin)(
    'writes again every event of a multi-event batch whose INSERT was in flight when the daemon was killed with SIGKILL',
    async () => {
      const pg = admin!;
      const table = `${freshSchema()}.events`;
      const sinkConfig = { name: 'pg', type: 'postgres', url: POSTGRES_URL, table } as const;
      const creator = new PostgresSink(postgresSinkConfigSchema.parse(sinkConfig));
      await creator.connect(new AbortController().signal);
      await creator.close();

      const { simulator, written, from } = await burstOnOneCareer(41);

      const dir = makeTempDir();
      const config = writeCliConfig(dir, simulator.url, {
        extra: [
          `watch: { careers: { discover: true }, identityProviderEvents: false, pollIntervalSeconds: 0.5, startFrom: "${new Date(from - 60_000).toISOString()}", schedule: { firstPollWithinSeconds: 0, historyHours: 0 } }`,
          'log: { level: info }',
        ],
        sinks: [`  - { name: pg, type: postgres, url: "${POSTGRES_URL}", table: ${table}, createTable: false }`],
      });
      await pg.query('BEGIN');
      // Ended however the test goes: the client is shared by the file's other tests.
      try {
        await pg.query(`LOCK TABLE ${table} IN SHARE MODE`);
        const first = startDaemon(config, simulator.apiKey);
        await until(
          async () =>
            (await pg.query(`SELECT 1 FROM pg_locks WHERE relation = $1::regclass AND NOT granted`, [table])).rows
              .length > 0,
          60_000,
          "the sink's INSERT waiting on the table lock",
        ).catch(withLogs(first));
        first.child.kill('SIGKILL');
        await first.exited();
        // The server does not notice a dead client while the statement waits on a lock: once the lock
        // went, the orphaned INSERT would commit, and the events would land without a second write.
        await pg.query(`SELECT pg_terminate_backend(pid) FROM pg_locks WHERE relation = $1::regclass AND NOT granted`, [
          table,
        ]);
      } finally {
        await pg.query('ROLLBACK');
      }
      expect((await pg.query(`SELECT id FROM ${table}`)).rows).toEqual([]);

      const second = startDaemon(config, simulator.apiKey);
      await untilSettled(dir, 'pg', written.length, second);
      second.child.kill('SIGTERM');
      await second.exited();
      const landed = (await pg.query<{ id: string }>(`SELECT id FROM ${table}`)).rows.map((r) => r.id);
      expect(new Set(landed)).toEqual(new Set(written));
    },
    120_000,
  );
});
