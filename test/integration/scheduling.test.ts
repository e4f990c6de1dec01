import { afterEach, describe, expect, it } from 'vitest';
import type { ChangefeedDaemon } from '../../src/daemon/changefeedDaemon.js';
import type { ManualClock } from '../support/manualClock.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { createDaemon, simulatorConfig, testClock } from '../support/daemonHarness.js';
import { makeTempDir } from '../support/tempDir.js';
import { withVirtualTime } from '../support/virtualTime.js';
import { ProcessMetrics } from '../../src/observe/processMetrics.js';
import { sampleValue } from '../support/metricsText.js';

let simulator: Simulator | undefined;
let daemon: ChangefeedDaemon | undefined;
afterEach(async () => {
  await daemon?.stop();
  await simulator?.close();
  daemon = undefined;
  simulator = undefined;
});

const MINUTE = 60_000;

/** Runs the daemon (the real poll loop, scheduler and budget) for `ms` of virtual time. */
async function runFor(clock: ManualClock, d: ChangefeedDaemon, ms: number): Promise<void> {
  await withVirtualTime(
    clock,
    (async () => {
      await d.start();
      await clock.sleep(ms);
    })(),
  );
}

describe('scheduling within the read budget', { timeout: 180_000 }, () => {
  it('a 429 pauses every poller of the key for exactly Retry-After, then pace resumes', async () => {
    const clock = testClock();
    simulator = await startSimulator({
      clock,
      seed: 31,
      careers: 4,
      skills: 2,
      eventsPerHour: 200,
      historyHours: 0,
      readsPerHour: 120,
    });
    const config = simulatorConfig({
      simulator,
      stateDir: makeTempDir(),
      overrides: { budget: { readsPerHour: 120, reserve: 0 } },
    });
    daemon = createDaemon(config, { clock });
    // Another client of the key spends most of the bucket after the daemon's first minutes.
    const other = (async () => {
      await clock.sleep(5 * MINUTE);
      simulator?.spendReads(simulator.apiKey, 110);
    })();
    await runFor(clock, daemon, 90 * MINUTE);
    await other;
    const requests = simulator.requests.filter((r) => r.path !== '/api/v1/ping');
    const limited = requests.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThanOrEqual(1);
    expect(limited.length).toBeLessThanOrEqual(2);
    const first = limited[0]!;
    // The simulator's window opened with the daemon's first request (the ping); Retry-After runs to its reset.
    const resetAt = (simulator.requests[0]?.at ?? 0) + 60 * MINUTE;
    const during = requests.filter((r) => r.at > first.at && r.at < resetAt);
    expect(during).toEqual([]);
    const after = requests.filter((r) => r.at >= resetAt);
    expect(after.length).toBeGreaterThan(10);
    // Pace resumes at once (within one budget interval, an hour / 119 at 120 an hour, and a
    // second), for careers and skills alike.
    expect(after[0]!.at - resetAt).toBeLessThanOrEqual((60 * MINUTE) / 119 + 1_000);
    expect(after.some((r) => r.path.includes('/careers/'))).toBe(true);
    expect(after.some((r) => r.path.includes('/skills/'))).toBe(true);
  });

  it("follows the server's RateLimit-Limit when it is lower than the configured cap, without a 429", async () => {
    const clock = testClock();
    simulator = await startSimulator({
      clock,
      seed: 32,
      careers: 8,
      skills: 4,
      eventsPerHour: 300,
      historyHours: 0,
      readsPerHour: 200,
    });
    const config = simulatorConfig({
      simulator,
      stateDir: makeTempDir(),
      overrides: { budget: { readsPerHour: 1000, reserve: 0.1 } },
    });
    const metrics = new ProcessMetrics();
    daemon = createDaemon(config, { clock, metrics });
    await runFor(clock, daemon, 2 * 60 * MINUTE);
    expect(sampleValue(await metrics.metrics(), 'changefeed_budget_allowance_per_hour', { tenant: 'default' })).toBe(
      180,
    );
    expect(simulator.requests.filter((r) => r.status === 429)).toEqual([]);
    const start = simulator.requests[0]!.at;
    for (let hour = 0; hour < 2; hour++) {
      const inHour = simulator.requests.filter(
        (r) => r.at >= start + hour * 60 * MINUTE && r.at < start + (hour + 1) * 60 * MINUTE,
      );
      expect(inHour.length).toBeLessThanOrEqual(200);
      expect(inHour.length).toBeGreaterThan(150);
    }
  });

  it('still polls a quiet object within maxIntervalMinutes while a busy one takes most of the budget', async () => {
    const clock = testClock();
    simulator = await startSimulator({
      clock,
      seed: 33,
      careers: 10,
      skills: 0,
      skillShare: 0,
      identityProviderShare: 0,
      workload: { kind: 'zipf', s: 3 },
      eventsPerHour: 2_000,
      historyHours: 0,
      readsPerHour: 1_000,
    });
    const config = simulatorConfig({
      simulator,
      stateDir: makeTempDir(),
      overrides: {
        watch: { identityProviderEvents: false, schedule: { maxIntervalMinutes: 10 } },
        budget: { readsPerHour: 120, reserve: 0 },
      },
    });
    daemon = createDaemon(config, { clock });
    await runFor(clock, daemon, 3 * 60 * MINUTE);
    const rates = simulator.trueRates();
    const ids = [...simulator.careerIds].sort(
      (a, b) => (rates.get(`career:${b}`) ?? 0) - (rates.get(`career:${a}`) ?? 0),
    );
    const pollsOf = (id: string) =>
      simulator!.requests.filter((r) => r.path.includes(`/careers/${id}/`)).map((r) => r.at);
    // The busiest career gets far more polls than the quietest ...
    expect(pollsOf(ids[0]!).length).toBeGreaterThan(3 * pollsOf(ids.at(-1)!).length);
    // ... yet after the first hour of learning no career waits longer than 10 minutes, rounded up to
    // the budget's slots (an hour / 119 at 120 an hour; polls leave only on them), plus one slot;
    // 1 ms for the clock's rounding. 10 minutes are 19.83 slots: the logs that starve together
    // (from 9 minutes) get slots 18 to 21, the last 635 s after its previous poll (at 30 s slots,
    // 20 slots were exactly 10 minutes and the worst gap 600 s).
    const slot = (60 * MINUTE) / 119;
    const settled = simulator.requests[0]!.at + 60 * MINUTE;
    for (const id of ids) {
      const times = pollsOf(id).filter((t) => t >= settled);
      expect(times.length).toBeGreaterThan(5);
      const gaps = times.slice(1).map((t, i) => t - times[i]!);
      expect(Math.max(...gaps), id).toBeLessThanOrEqual((Math.ceil((10 * MINUTE) / slot) + 1) * slot + 1);
    }
  });

  /** Runs the daemon with a 20-minute edit session on one career; returns the times that career was polled. */
  async function pollsDuringSession(schedule: Record<string, unknown>) {
    const clock = testClock();
    simulator = await startSimulator({
      clock,
      seed: 34,
      careers: 30,
      skills: 0,
      skillShare: 0,
      identityProviderShare: 0,
      eventsPerHour: 0.1,
      historyHours: 0,
      readsPerHour: 1_000,
    });
    const config = simulatorConfig({
      simulator,
      stateDir: makeTempDir(),
      overrides: { watch: { identityProviderEvents: false, schedule }, budget: { readsPerHour: 120, reserve: 0 } },
    });
    daemon = createDaemon(config, { clock });
    const career = [...simulator.careerIds][3]!;
    const start = clock.now();
    const session = { from: start + 40 * MINUTE, to: start + 60 * MINUTE };
    const edits = (async () => {
      // After every career has been polled once, so the session is counted, not taken for a backfill.
      await clock.sleep(39 * MINUTE);
      simulator?.appendBurst('career', career, 40, session);
    })();
    await runFor(clock, daemon, 90 * MINUTE);
    await edits;
    const polls = simulator.requests.filter((r) => r.path.includes(`/careers/${career}/`)).map((r) => r.at);
    return {
      during: polls.filter((t) => t >= session.from && t <= session.to + MINUTE),
      after: polls.filter((t) => t > session.to + 3 * MINUTE),
    };
  }

  it(
    'follows up an edit session in progress: polls that career every pollIntervalSeconds until ' + 'the session ends',
    async () => {
      const { during, after } = await pollsDuringSession({});
      // 120 requests/h over 30 careers is a poll every 15 minutes; the session lasts 20 minutes,
      // so a regular poll lands in it and the follow-ups, a minute apart, take it from there.
      expect(during.length).toBeGreaterThanOrEqual(5);
      const gaps = during.slice(1).map((t, i) => t - during[i]!);
      expect(gaps.filter((g) => g <= 75_000).length).toBeGreaterThanOrEqual(4);
      // Once a poll finds nothing new the follow-ups stop: no two polls a few minutes apart afterwards.
      const later = after.slice(1).map((t, i) => t - after[i]!);
      expect(later.every((g) => g > 3 * MINUTE)).toBe(true);
    },
  );

  it('with followUpPolls 0 the session waits for the regular polls', async () => {
    const { during } = await pollsDuringSession({ followUpPolls: 0 });
    expect(during.length).toBeLessThanOrEqual(3);
  });

  it('a backfill takes only the reads that regular polls leave: the other careers keep their pace', async () => {
    const clock = testClock();
    simulator = await startSimulator({
      clock,
      seed: 35,
      careers: 6,
      skills: 0,
      skillShare: 0,
      identityProviderShare: 0,
      eventsPerHour: 30,
      historyHours: 0,
      readsPerHour: 1_000,
    });
    const [heavy, ...others] = [...simulator.careerIds];
    // 6,000 changes five hours ago: 30 pages that only a backfill from six hours back reads.
    simulator.appendBurst('career', heavy!, 6_000, {
      from: clock.now() - 5 * 60 * MINUTE,
      to: clock.now() - 4 * 60 * MINUTE,
    });
    const config = simulatorConfig({
      simulator,
      stateDir: makeTempDir(),
      startFrom: new Date(clock.now() - 6 * 60 * MINUTE).toISOString(),
      overrides: {
        watch: {
          identityProviderEvents: false,
          discovery: { schedule: '0 0 1 1 *' },
          schedule: { maxIntervalMinutes: 10 },
        },
        budget: { readsPerHour: 120, reserve: 0 },
      },
    });
    daemon = createDaemon(config, { clock });
    await runFor(clock, daemon, 60 * MINUTE);
    const pollsOf = (id: string) =>
      simulator!.requests.filter((r) => r.path.includes(`/careers/${id}/`)).map((r) => r.at);
    const pages = pollsOf(heavy!);
    // The whole history is read: 30 pages of 200, plus the regular polls after it.
    expect(pages.length).toBeGreaterThanOrEqual(31);
    const [start, end] = [pages[0]!, pages[29]!];
    // At 120 reads an hour the 30 pages alone take 15 minutes; the other careers, due every few
    // minutes, are polled all the while instead of waiting for the backfill to finish.
    expect(end - start).toBeGreaterThan(15 * MINUTE);
    for (const id of others) {
      const during = pollsOf(id).filter((t) => t > start && t < end);
      const times = [start, ...during, end];
      const gaps = times.slice(1).map((t, i) => t - times[i]!);
      expect(during.length, id).toBeGreaterThanOrEqual(2);
      expect(Math.max(...gaps), id).toBeLessThanOrEqual(10 * MINUTE + 30_000);
    }
  });
});
