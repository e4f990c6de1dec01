import { createServer } from 'node:net';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { buildStatusReport } from '../../src/cli/statusReport.js';
import { ManualClock } from '../support/manualClock.js';
import { readinessChecks } from '../../src/daemon/readinessChecks.js';
import { createLogger } from '../../src/observe/createLogger.js';
import { withVirtualTime } from '../support/virtualTime.js';
import { receiver, storeFile, storeWithEvents, webhookEngine } from '../support/webhookHarness.js';
import { openSqliteStoreFile } from '../support/sqliteStoreFile.js';

const DAY = 86_400_000;

/** A loopback port nothing listens on: connections to it are refused at once. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
  return port;
}

/** A logger whose lines are kept, to count what the worker said. */
function recordingLogger() {
  const out = new PassThrough();
  const lines: { msg: string; err?: string }[] = [];
  let rest = '';
  out.on('data', (chunk: Buffer) => {
    const parts = (rest + chunk.toString()).split('\n');
    rest = parts.pop() ?? '';
    for (const line of parts) if (line !== '') lines.push(JSON.parse(line) as { msg: string; err?: string });
  });
  return { logger: createLogger({ destination: out }), lines };
}

describe('webhook sink, a receiver that refuses connections from the start', () => {
  it('counts the refusals toward the give-up rule, across a restart, and is disabled after 5 days, nothing lost', async () => {
    const clock = new ManualClock();
    const url = `http://127.0.0.1:${await closedPort()}/hook`;
    const { store, dir } = await storeWithEvents(5, 5);
    const firstFailureAt = clock.now();

    const log = recordingLogger();
    const first = webhookEngine({ store, url, clock, logger: log.logger });
    const [firstReport] = await withVirtualTime(clock, first.drain(clock.now() + 3 * DAY), { maxVirtualMs: 3 * DAY });
    expect(firstReport?.drained).toBe(false);
    const [state] = first.connectionStates();
    expect(state).toMatchObject({ disabled: false, failingSince: firstFailureAt });
    expect(state?.lastError).toMatch(/cannot connect to http:\/\/127\.0\.0\.1:\d+: connection failed: ECONNREFUSED/);
    // /readyz and the endpoint-failing metric read the same state.
    const readiness = readinessChecks({
      now: clock.now(),
      store,
      credential: { name: 'credential', ok: true },
      pollLoop: 'running',
      clockProblem: undefined,
      sinks: first.connectionStates(),
      sinkGraceMs: 60_000,
    }).find((c) => c.name === 'sink:hook');
    expect(readiness).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/^endpoint failing for 259\d{3} s: cannot connect/),
    });
    await first.stop();
    // Probes on the endpoint schedule (5 s, 5 min, 30 min, 2 h, 5 h, then every 10 h), not a
    // reconnect a minute for three days.
    const failing = log.lines.filter((l) => l.msg.startsWith('endpoint failing'));
    expect(failing.length).toBeGreaterThanOrEqual(8);
    expect(failing.length).toBeLessThanOrEqual(12);
    expect(log.lines.filter((l) => l.msg.includes('reconnecting'))).toEqual([]);
    const [status] = (await buildStatusReport(store, clock.now())).sinks;
    expect(status).toMatchObject({ failingSince: new Date(firstFailureAt).toISOString(), disabledReason: null });
    await store.close();

    // Restarted 3 days into the outage, with no connection pool: the clock runs on from the first refusal.
    const reopened = openSqliteStoreFile(storeFile(dir));
    const second = webhookEngine({ store: reopened, url, clock });
    const [report] = await withVirtualTime(clock, second.drain(clock.now() + 3 * DAY), { maxVirtualMs: 3 * DAY });
    await second.stop();
    expect(report?.drained).toBe(false);
    expect(second.connectionStates()[0]?.disabled).toBe(true);
    const [recorded] = await reopened.sinks.list();
    expect(recorded?.disabledReason).toMatch(/^every attempt failed for 5 days .*ECONNREFUSED/);
    expect(recorded?.lastErrorAt).toBeLessThan(firstFailureAt + 5 * DAY + DAY / 2);
    expect(await reopened.outbox.counts('hook')).toMatchObject({ pending: 5, dead: 0 });
    const charged = reopened.db.prepare('SELECT count(*) AS n FROM deliveries WHERE attempts > 0').get();
    expect(charged).toEqual({ n: 0 });
    await reopened.close();
  });

  it('a receiver that comes up with nothing pending ends the failure run on connecting', async () => {
    const clock = new ManualClock();
    const hook = await receiver();
    const { store } = await storeWithEvents(0, 1);
    await store.sinks.recordState({
      sink: 'hook',
      connected: false,
      pausedUntil: 0,
      consecutiveFailures: 3,
      lastError: 'cannot connect to http://127.0.0.1:1: connection failed: ECONNREFUSED',
      lastErrorAt: clock.now(),
      lastDeliveryAt: null,
      circuit: 'open',
      disabledReason: null,
      failingSince: clock.now() - DAY,
    });
    const engine = webhookEngine({ store, url: hook.url, clock });
    engine.start();
    // Connected and no longer failing: before its first round the worker has not yet read the
    // recorded run, and shows no failure only because it knows none.
    const recovered = async (): Promise<void> => {
      const done = () => {
        const state = engine.connectionStates()[0];
        return state !== undefined && state.disconnectedSince === null && state.failingSince === null;
      };
      while (!done()) await clock.sleep(1_000);
    };
    await withVirtualTime(clock, recovered(), { maxVirtualMs: 60_000 });
    await engine.stop();
    expect(engine.connectionStates()[0]).toMatchObject({ disabled: false, failingSince: null, lastError: null });
    expect((await store.sinks.list())[0]).toMatchObject({ failingSince: null, disabledReason: null });
    await store.close();
  });
});
