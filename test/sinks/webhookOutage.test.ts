import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { buildStatusReport, formatStatusReport } from '../../src/cli/statusReport.js';
import { ManualClock } from '../support/manualClock.js';
import { createLogger } from '../../src/observe/createLogger.js';
import type { ReceivedWebhook } from '../../src/receiver/webhookReceiver.js';
import { withVirtualTime } from '../support/virtualTime.js';
import { receiver, storeFile, storeWithEvents, webhookEngine } from '../support/webhookHarness.js';
import { openSqliteStoreFile } from '../support/sqliteStoreFile.js';

const DAY = 86_400_000;

const entryOf = (r: ReceivedWebhook): { object: number; index: number } => {
  const [, object, index] = (JSON.parse(r.body) as { data: { id: string } }).data.id.split('_').map(Number);
  return { object: object as number, index: index as number };
};

describe('webhook sink, through an endpoint outage', () => {
  // The give-up clock lived in memory: a daemon restarted (or a lease handed over) during an
  // outage started it again, so a crash loop or a rolling update kept the endpoint from ever
  // being disabled, and a restart re-enabled a disabled one.
  it('keeps the give-up clock and the disabled state across restarts, until the sink is enabled', async () => {
    const clock = new ManualClock();
    let healthy = false;
    const requests: number[] = [];
    const hook = await receiver({ respond: () => (requests.push(clock.now()), { status: healthy ? 204 : 503 }) });
    const { store, dir } = await storeWithEvents(5, 5);
    const firstFailureAt = clock.now();

    const first = webhookEngine({ store, url: hook.url, clock });
    await withVirtualTime(clock, first.drain(clock.now() + 3 * DAY), { maxVirtualMs: 3 * DAY });
    await first.stop();
    expect(first.connectionStates()[0]?.disabled).toBe(false);
    expect((await store.sinks.list())[0]).toMatchObject({ failingSince: firstFailureAt, disabledReason: null });
    await store.close();

    // A restart 3 days into the outage: the probe goes out at once, alone, and the give-up rule
    // counts from the first failure, 3 days ago.
    const reopened = openSqliteStoreFile(storeFile(dir));
    const restartedAt = clock.now();
    const before = requests.length;
    const second = webhookEngine({ store: reopened, url: hook.url, clock });
    const [report] = await withVirtualTime(clock, second.drain(clock.now() + 3 * DAY), { maxVirtualMs: 3 * DAY });
    await second.stop();
    const afterRestart = requests.slice(before);
    expect(afterRestart[0]).toBe(restartedAt);
    expect(afterRestart.filter((t) => t === restartedAt)).toHaveLength(1);
    expect(report?.drained).toBe(false);
    expect(second.connectionStates()[0]?.disabled).toBe(true);
    const [recorded] = await reopened.sinks.list();
    expect(recorded?.disabledReason).toMatch(/^every attempt failed for 5 days .*HTTP 503/);
    expect(Math.max(...afterRestart)).toBeLessThan(firstFailureAt + 5 * DAY + DAY / 2);

    // Restarted again: still disabled, nothing sent.
    const sent = requests.length;
    const third = webhookEngine({ store: reopened, url: hook.url, clock });
    await withVirtualTime(clock, third.drain(clock.now() + DAY), { maxVirtualMs: DAY });
    await third.stop();
    expect(requests).toHaveLength(sent);
    expect(third.connectionStates()[0]?.disabled).toBe(true);
    expect(await reopened.outbox.counts('hook')).toMatchObject({ pending: 5, dead: 0 });

    // Enabled (`changefeed sinks enable hook`) once the endpoint is fixed: everything arrives.
    healthy = true;
    expect(await reopened.sinks.enable('hook')).toBe(true);
    const fourth = webhookEngine({ store: reopened, url: hook.url, clock });
    await withVirtualTime(clock, fourth.drain(clock.now() + DAY), { maxVirtualMs: DAY });
    await fourth.stop();
    expect(await reopened.outbox.counts('hook')).toMatchObject({ pending: 0, delivered: 5, dead: 0 });
    expect((await reopened.sinks.list())[0]).toMatchObject({ failingSince: null, disabledReason: null });
    await reopened.close();
  });

  it('a running daemon delivers again within seconds of `sinks enable`', async () => {
    const clock = new ManualClock();
    const hook = await receiver();
    const { store } = await storeWithEvents(3, 3);
    await store.sinks.recordState({
      sink: 'hook',
      connected: false,
      pausedUntil: 0,
      consecutiveFailures: 40,
      lastError: 'every attempt failed for 5 days',
      lastErrorAt: clock.now(),
      lastDeliveryAt: null,
      circuit: 'open',
      disabledReason: 'every attempt failed for 5 days',
      failingSince: clock.now() - 5 * DAY,
    });
    const engine = webhookEngine({ store, url: hook.url, clock });
    engine.start();
    const delivered = async (): Promise<void> => {
      while ((await store.outbox.counts('hook')).delivered < 3) await clock.sleep(1_000);
    };
    const waitUntil = async (done: () => boolean): Promise<void> => {
      while (!done()) await clock.sleep(1_000);
    };
    await withVirtualTime(
      clock,
      waitUntil(() => engine.connectionStates()[0]?.disabled === true),
    );
    await withVirtualTime(clock, clock.sleep(60_000));
    expect(hook.count).toBe(0);
    const enabledAt = clock.now();
    expect(await store.sinks.enable('hook')).toBe(true);
    await withVirtualTime(clock, delivered());
    expect(clock.now() - enabledAt).toBeLessThanOrEqual(6_000);
    await engine.stop();
    expect(hook.count).toBe(3);
    expect((await store.sinks.list())[0]).toMatchObject({ disabledReason: null, failingSince: null });
    await store.close();
  });

  // When the endpoint first fails, the writes already in flight all get failing answers before
  // the circuit opens: none of them is the events' fault.
  it('charges the writes in flight when the endpoint first fails no attempt, and sends them again in order', async () => {
    const clock = new ManualClock();
    let releaseBurst: () => void = () => undefined;
    const burstArrived = new Promise<void>((resolve) => (releaseBurst = resolve));
    let fixed = false;
    const hook = await receiver({
      respond: (_r, n) => {
        if (n === 8) releaseBurst();
        if (n <= 8) return burstArrived.then(() => ({ status: 401, body: 'signature mismatch' }));
        return { status: fixed ? 204 : 401 };
      },
    });
    const { store } = await storeWithEvents(40, 10);
    const engine = webhookEngine({ store, url: hook.url, clock });
    await withVirtualTime(clock, engine.drain(clock.now() + 60_000));
    const burst = hook.received.slice(0, 8);
    expect(new Set(burst.map((r) => entryOf(r).object)).size).toBe(8);
    // The 8 in flight, then one probe after 5 s (+5%), which fails too; the next is 5 min away.
    expect(hook.count).toBe(9);
    expect(await store.outbox.counts('hook')).toMatchObject({ pending: 40, dead: 0 });
    const charged = store.db.prepare("SELECT count(*) AS n FROM deliveries WHERE attempts > 0 OR state = 'dead'").get();
    expect(charged).toEqual({ n: 0 });

    fixed = true;
    await withVirtualTime(clock, engine.drain(clock.now() + DAY), { maxVirtualMs: DAY });
    await engine.stop();
    expect(await store.outbox.counts('hook')).toMatchObject({ pending: 0, delivered: 40, dead: 0 });
    const attempts = store.db.prepare('SELECT DISTINCT attempts FROM deliveries').all();
    expect(attempts).toEqual([{ attempts: 1 }]);
    const deliveredOrder = new Map<number, number[]>();
    for (const r of hook.received.slice(9)) {
      const { object, index } = entryOf(r);
      deliveredOrder.set(object, [...(deliveredOrder.get(object) ?? []), index]);
    }
    for (const indexes of deliveredOrder.values()) expect(indexes).toEqual([0, 1, 2, 3]);
    expect(deliveredOrder.size).toBe(10);
    await store.close();
  });
});

describe('webhook sink, an endpoint-level answer', () => {
  it("shows the start of the answer's body, escaped, in status and the log", async () => {
    const clock = new ManualClock();
    const out = new PassThrough();
    let log = '';
    out.on('data', (c: Buffer) => (log += c.toString()));
    const body = `\u001b[2Jmaintenance "until 5"\u2028${'x'.repeat(1_000)}`;
    const hook = await receiver({ respond: () => ({ status: 503, body }) });
    const { store } = await storeWithEvents(1, 1);
    const engine = webhookEngine({ store, url: hook.url, clock, logger: createLogger({ destination: out }) });
    const failedAt = clock.now();
    await withVirtualTime(clock, engine.drain(clock.now() + 1_000));
    await engine.stop();
    const expected = `HTTP 503 answering "\\u001b[2Jmaintenance \\"until 5\\"\\u2028${'x'.repeat(200 - 28)}" (cut)`;
    expect(engine.connectionStates()[0]?.lastError).toContain(expected);
    const [sink] = (await buildStatusReport(store, clock.now())).sinks;
    expect(sink?.lastError).toContain(expected);
    expect(sink?.failingSince).toBe(new Date(failedAt).toISOString());
    const text = formatStatusReport({ ...(await buildStatusReport(store, clock.now())), logs: [] });
    expect(text).toContain(`failing since ${sink?.failingSince}: POST`);
    expect(text).not.toContain('\u001b');
    expect(text).not.toContain('\u2028');
    const warning = log
      .split('\n')
      .filter((line) => line.includes('endpoint failing'))
      .map((line) => JSON.parse(line) as { err: string })[0];
    expect(warning?.err).toContain(expected);
    await store.close();
  });
});
