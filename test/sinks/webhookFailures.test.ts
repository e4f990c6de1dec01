import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { ManualClock } from '../support/manualClock.js';
import { createLogger } from '../../src/observe/createLogger.js';
import type { ReceivedWebhook } from '../../src/receiver/webhookReceiver.js';
import { withVirtualTime } from '../support/virtualTime.js';
import { receiver, SECRET, storeFile, storeWithEvents, webhookEngine } from '../support/webhookHarness.js';
import { openSqliteStoreFile } from '../support/sqliteStoreFile.js';

const entryOf = (r: ReceivedWebhook): { object: number; index: number } => {
  const [, object, index] = (JSON.parse(r.body) as { data: { id: string } }).data.id.split('_').map(Number);
  return { object: object as number, index: index as number };
};
const fastRetry = { initialDelayMs: 1_000, maxDelayMs: 60_000, maxAttempts: 0, maxAgeSeconds: 0 };

describe('webhook sink, when the endpoint fails', () => {
  // A 4xx is the endpoint refusing one event, not an outage: counted by the circuit breaker, the
  // sink paused while the pause doubled and one event died per probe (after 60 s: 6 dead, 148 pending).
  it('dead-letters events answered 400 at once without opening the circuit, and delivers the rest', async () => {
    const clock = new ManualClock();
    const hook = await receiver({ respond: (_r, n) => ({ status: n <= 30 ? 400 : 204 }) });
    const { store } = await storeWithEvents(150, 150);
    const engine = webhookEngine({
      store,
      url: hook.url,
      clock,
      sink: { delivery: { maxInFlight: 1, retry: fastRetry } },
    });
    await withVirtualTime(clock, engine.drain(clock.now() + 60_000));
    await engine.stop();
    expect(await store.outbox.counts('hook')).toMatchObject({ pending: 0, dead: 30, delivered: 120 });
    expect((await store.sinks.list()).find((s) => s.name === 'hook')?.circuit).toBe('closed');
    await store.close();
  });

  it('backs the endpoint off on delivery.endpointBackoff after 5xx, the last pause repeating', async () => {
    const clock = new ManualClock();
    const times: number[] = [];
    const hook = await receiver({ respond: (_r, n) => (times.push(clock.now()), { status: n <= 4 ? 500 : 204 }) });
    const { store } = await storeWithEvents(1, 1);
    const engine = webhookEngine({
      store,
      url: hook.url,
      clock,
      sink: { delivery: { maxInFlight: 1, retry: fastRetry, endpointBackoff: { scheduleMs: [1_000, 2_000, 4_000] } } },
    });
    await withVirtualTime(clock, engine.drain(clock.now() + 3_600_000));
    await engine.stop();
    const gaps = times.slice(1).map((t, i) => t - (times[i] as number));
    // random() = 0.5: each pause lengthened by 5%; the last one repeats.
    expect(gaps).toEqual([1_050, 2_100, 4_200, 4_200]);
    expect(await store.outbox.counts('hook')).toMatchObject({ pending: 0, delivered: 1, dead: 0 });
    await store.close();
  });

  // A receiver answering 401 (a wrong secret on its side) turned 69 events into dead letters in
  // about 40 s while the sink counted as connected.
  it('keeps every event pending while the endpoint answers 401, says why, and delivers once it is fixed', async () => {
    const clock = new ManualClock();
    let fixed = false;
    const hook = await receiver({ respond: () => ({ status: fixed ? 204 : 401, body: 'bad signature' }) });
    const { store } = await storeWithEvents(69, 10);
    const engine = webhookEngine({ store, url: hook.url, clock });
    await withVirtualTime(clock, engine.drain(clock.now() + 3_600_000));
    expect(await store.outbox.counts('hook')).toMatchObject({ pending: 69, dead: 0 });
    // The 8 writes in flight when it first failed, then one probe after each pause of the default
    // schedule within the hour: 5 s, 5 min, 30 min (each +5% at random() = 0.5).
    expect(hook.count).toBe(11);
    const [state] = engine.connectionStates();
    expect(state).toMatchObject({ circuit: 'open', disabled: false, failingSince: expect.any(Number) });
    expect(state?.lastError).toMatch(
      /HTTP 401 answering "bad signature"; the receiver refused the request: check that it verifies with the signing secret/,
    );
    const [recorded] = await store.sinks.list();
    expect(recorded).toMatchObject({ connected: false, circuit: 'open', disabledReason: null });
    fixed = true;
    await withVirtualTime(clock, engine.drain(clock.now() + 24 * 3_600_000));
    await engine.stop();
    expect(await store.outbox.counts('hook')).toMatchObject({ pending: 0, delivered: 69, dead: 0 });
    expect(engine.connectionStates()[0]).toMatchObject({ circuit: 'closed', failingSince: null });
    await store.close();
  });

  it('disables the endpoint after disableAfterSeconds of continuous failure, its events still pending', async () => {
    const clock = new ManualClock();
    const hook = await receiver({ respond: () => ({ status: 503 }) });
    const { store } = await storeWithEvents(5, 5);
    const engine = webhookEngine({ store, url: hook.url, clock });
    const [report] = await withVirtualTime(clock, engine.drain(clock.now() + 10 * 86_400_000), {
      maxVirtualMs: 10 * 86_400_000,
    });
    await engine.stop();
    expect(report?.drained).toBe(false);
    expect(await store.outbox.counts('hook')).toMatchObject({ pending: 5, dead: 0 });
    expect(engine.connectionStates()[0]?.disabled).toBe(true);
    const [recorded] = await store.sinks.list();
    expect(recorded?.disabledReason).toMatch(
      /^every attempt failed for 5 days \(\d+ in a row; disableAfterSeconds 432000\); last: .*HTTP 503/,
    );
    // The 5 writes first in flight, then a probe after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, and every
    // 10 h (+5% each) until one fails 5 days after the first failure: 16 probes.
    expect(hook.count).toBe(21);
    await store.close();
  });

  // The receiver dates Retry-After by its own clock (its Date header): read against ours, a
  // receiver an hour ahead would turn "in 30 s" into the hour's cap.
  const receiverNow = Date.now() + 3_600_000;
  it.each([
    ['in seconds', { 'retry-after': '30' }],
    [
      'as an HTTP-date, read against the answer’s own Date, not the local clock',
      { date: new Date(receiverNow).toUTCString(), 'retry-after': new Date(receiverNow + 30_000).toUTCString() },
    ],
  ])('waits at least Retry-After after a 429, given %s', async (_, headers: Record<string, string>) => {
    const clock = new ManualClock();
    const times: number[] = [];
    const hook = await receiver({
      respond: (_r, n) => (times.push(clock.now()), n === 1 ? { status: 429, headers } : { status: 200 }),
    });
    const { store } = await storeWithEvents(1, 1);
    const engine = webhookEngine({ store, url: hook.url, clock, sink: { delivery: { retry: fastRetry } } });
    await withVirtualTime(clock, engine.drain(clock.now() + 3_600_000));
    await engine.stop();
    expect(times).toHaveLength(2);
    expect((times[1] as number) - (times[0] as number)).toBe(30_000);
    await store.close();
  });

  it('dead-letters an event after maxAttempts with status and response, and delivers it once re-queued', async () => {
    const clock = new ManualClock();
    let healthy = false;
    const hook = await receiver({
      respond: () => (healthy ? { status: 204 } : { status: 409, body: 'upstream exploded' }),
    });
    const { store } = await storeWithEvents(2, 1);
    const engine = webhookEngine({
      store,
      url: hook.url,
      clock,
      sink: { retryClientErrors: true, delivery: { retry: { ...fastRetry, maxAttempts: 3 } } },
    });
    await withVirtualTime(clock, engine.drain(clock.now() + 3_600_000));
    const [dead, ...more] = await store.deadLetters.list({ sink: 'hook' });
    expect(more).toHaveLength(1);
    expect(dead).toMatchObject({ attempts: 3, lastStatus: 409, lastResponse: 'upstream exploded' });
    expect(dead?.lastError).toMatch(/gave up after 3 attempts: HTTP 409/);
    expect(hook.received).toHaveLength(6);
    healthy = true;
    expect(await store.deadLetters.requeueSink('hook', clock.now())).toBe(2);
    await withVirtualTime(clock, engine.drain(clock.now() + 3_600_000));
    await engine.stop();
    expect(await store.outbox.counts('hook')).toMatchObject({ pending: 0, delivered: 2, dead: 0 });
    await store.close();
  });

  it('dead-letters a 4xx at once and lets the next event of the same object go', async () => {
    const hook = await receiver({
      respond: (_r, n) => ({ status: n === 1 ? 422 : 204, body: n === 1 ? '{"error":"bad shape"}' : '' }),
    });
    const { store } = await storeWithEvents(3, 1);
    const engine = webhookEngine({ store, url: hook.url, clock: systemClock });
    await engine.drain(Date.now() + 10_000);
    await engine.stop();
    expect(hook.received.map((r) => entryOf(r).index)).toEqual([0, 1, 2]);
    expect(await store.deadLetters.list()).toEqual([
      expect.objectContaining({ attempts: 1, lastStatus: 422, lastResponse: '{"error":"bad shape"}' }),
    ]);
    await store.close();
  });

  it('disables the sink on 410 Gone and keeps its events pending', async () => {
    const hook = await receiver({ respond: () => ({ status: 410 }) });
    const { store } = await storeWithEvents(4, 2);
    const engine = webhookEngine({ store, url: hook.url, clock: systemClock });
    const [report] = await engine.drain(Date.now() + 10_000);
    await engine.stop();
    expect(report?.drained).toBe(false);
    expect(hook.received.length).toBeLessThanOrEqual(2);
    expect(await store.outbox.counts('hook')).toMatchObject({ pending: 4, dead: 0 });
    expect((await store.sinks.list())[0]?.disabledReason).toMatch(/410 Gone/);
    await store.close();
  });

  it('opens the circuit after repeated retried failures: no request during the cool-down, then one probe', async () => {
    const clock = new ManualClock();
    const times: number[] = [];
    const hook = await receiver({ respond: () => (times.push(clock.now()), { status: 409 }) });
    const { store } = await storeWithEvents(20, 20);
    const engine = webhookEngine({
      store,
      url: hook.url,
      clock,
      sink: {
        retryClientErrors: true,
        delivery: {
          maxInFlight: 1,
          retry: { ...fastRetry, initialDelayMs: 10 },
          circuitBreaker: { failureThreshold: 3, cooldownMs: 10_000, maxCooldownMs: 40_000 },
        },
      },
    });
    const start = clock.now();
    await withVirtualTime(clock, engine.drain(start + 60_000));
    await engine.stop();
    const offsets = times.map((t) => t - start);
    expect(offsets.slice(0, 3).every((t) => t < 100)).toBe(true);
    // Open for 10 s, probe fails, open for 20 s, probe fails, open for 40 s (past the deadline).
    expect(offsets.slice(3)).toEqual([offsets[2]! + 10_000, offsets[2]! + 30_000]);
    expect((await store.sinks.list())[0]?.circuit).toBe('open');
    await store.close();
  });

  it('backs the endpoint off on timeouts and dropped connections, charging the event no attempt', async () => {
    const hook = await receiver({
      respond: (_r, n) => (n === 1 ? { delayMs: 1_000 } : n === 2 ? { drop: true } : { status: 204 }),
    });
    const { store } = await storeWithEvents(1, 1);
    const engine = webhookEngine({
      store,
      url: hook.url,
      clock: systemClock,
      sink: { timeoutMs: 200, delivery: { retry: fastRetry, endpointBackoff: { scheduleMs: [20] } } },
    });
    await engine.drain(Date.now() + 10_000);
    await engine.stop();
    expect(hook.received).toHaveLength(3);
    const [row] = store.db.prepare('SELECT attempts, state FROM deliveries').all() as {
      attempts: number;
      state: string;
    }[];
    expect(row).toEqual({ attempts: 1, state: 'delivered' });
    await store.close();
  });

  it(
    'keeps each object in order under concurrency and failures: nothing overtakes an ' + 'unacknowledged event',
    async () => {
      const acknowledged = new Map<number, number>();
      const violations: string[] = [];
      const hook = await receiver({
        respond: (r, n) => {
          const { object, index } = entryOf(r);
          const next = (acknowledged.get(object) ?? -1) + 1;
          if (index !== next) violations.push(`object ${object}: got ${index} before ${next} was acknowledged`);
          if (n % 3 === 0) return { status: 503 };
          acknowledged.set(object, index);
          return { status: 204 };
        },
      });
      const { store } = await storeWithEvents(200, 10);
      // Every third request fails, whichever event it carries: an event unlucky five times while
      // others pass would be judged poison. This test is about order, so the search is off.
      const engine = webhookEngine({
        store,
        url: hook.url,
        clock: systemClock,
        sink: {
          delivery: {
            maxInFlight: 8,
            retry: { ...fastRetry, initialDelayMs: 5 },
            endpointBackoff: { scheduleMs: [5] },
            circuitBreaker: { failureThreshold: 0 },
            poison: { strikes: 0 },
          },
        },
      });
      await engine.drain(Date.now() + 30_000);
      await engine.stop();
      expect(violations).toEqual([]);
      expect([...acknowledged.values()].every((last) => last === 19)).toBe(true);
      await store.close();
    },
  );

  it('resumes a retry after a restart: retry state lives in the store', async () => {
    const clock = new ManualClock();
    let healthy = false;
    const hook = await receiver({ respond: () => ({ status: healthy ? 204 : 409 }) });
    const { store, dir } = await storeWithEvents(1, 1);
    const first = webhookEngine({
      store,
      url: hook.url,
      clock,
      sink: { retryClientErrors: true, delivery: { retry: fastRetry } },
    });
    await withVirtualTime(clock, first.drain(clock.now() + 100));
    await first.stop();
    await store.close();
    healthy = true;
    const reopened = openSqliteStoreFile(storeFile(dir));
    const row = reopened.db
      .prepare('SELECT attempts, next_attempt_at AS nextAttemptAt, last_error AS lastError FROM deliveries')
      .get() as { attempts: number; nextAttemptAt: number; lastError: string };
    expect(row.attempts).toBe(1);
    expect(row.nextAttemptAt).toBeGreaterThan(clock.now() - 100);
    expect(row.lastError).toBe('HTTP 409');
    const second = webhookEngine({ store: reopened, url: hook.url, clock, sink: { delivery: { retry: fastRetry } } });
    await withVirtualTime(clock, second.drain(clock.now() + 3_600_000));
    await second.stop();
    expect(hook.received).toHaveLength(2);
    expect(await reopened.outbox.counts('hook')).toMatchObject({ delivered: 1, pending: 0 });
    await reopened.close();
  });

  it('never logs the signing secret or the signature', async () => {
    const out = new PassThrough();
    let text = '';
    out.on('data', (c: Buffer) => (text += c.toString()));
    const hook = await receiver({ respond: (_r, n) => ({ status: n <= 2 ? 500 : 422, body: 'nope' }) });
    const { store } = await storeWithEvents(2, 1);
    const engine = webhookEngine({
      store,
      url: hook.url,
      clock: systemClock,
      logger: createLogger({ level: 'trace', destination: out }),
      sink: { delivery: { retry: { ...fastRetry, initialDelayMs: 5 }, endpointBackoff: { scheduleMs: [5] } } },
    });
    await engine.drain(Date.now() + 10_000);
    await engine.stop();
    expect(text).toContain('endpoint failing');
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(SECRET.slice('whsec_'.length));
    expect(text).not.toMatch(/v1,[A-Za-z0-9+/=]{20,}/);
    await store.close();
  });
});
