import { describe, expect, it } from 'vitest';
import { ManualClock } from '../support/manualClock.js';
import type { LogKind } from '../../src/logs.js';
import {
  allocateFrequencies,
  allocationWeight,
  chooseAlpha,
  expectedDelay,
  firstInFirstPollOrder,
  latestFirstPollStarts,
  squareRootOptimumMeanHours,
  type FirstPoll,
} from '../../src/schedule/pollAllocation.js';
import type { LogCandidate } from '../../src/schedule/nextAction.js';
import { freeSlotDecision } from '../support/freeSlotDecision.js';
import { PollScheduler } from '../../src/schedule/pollScheduler.js';
import { ReadBudget } from '../../src/poll/readBudget.js';
import { scheduleConfigSchema } from '../../src/schedule/scheduleConfig.js';
import type { WatchedLog } from '../../src/store/storeRecords.js';

const T0 = Date.UTC(2026, 0, 1, 8);

/** What the poll loop decides at `now` with a slot free: `nextAction` over the scheduler's candidates. */
function decide(scheduler: PollScheduler, now: number): { poll: WatchedLog } | { wakeAt: number } {
  const action = freeSlotDecision(now, scheduler.candidates(now));
  if ('wakeAt' in action) return action;
  if ('launch' in action && action.launch === 'poll') return { poll: scheduler.watchedLog(action.key)! };
  throw new Error(`unexpected decision ${JSON.stringify(action)}`);
}
const HOUR = 3_600_000;

const watched = (log: LogKind, objectId: string): WatchedLog => ({
  log,
  objectId,
  origin: 'config',
  status: 'active',
  statusReason: null,
  coverageStart: T0,
  windowEnd: T0,
  sortOrder: null,
  lastPollAt: null,
  lastSuccessAt: null,
  lastError: null,
  consecutiveFailures: 0,
  nextPollAt: T0,
  entriesIngested: 0,
  createdAt: T0,
  firstPollBy: T0,
});

describe('allocateFrequencies', () => {
  it('spends the budget exactly, proportionally to the weights', () => {
    const { frequencies } = allocateFrequencies({
      weights: [4, 2, 1, 1],
      costs: [1, 1, 1, 1],
      budgetPerHour: 80,
      minFrequency: 0,
      maxFrequency: Infinity,
    });
    expect(frequencies.map((f) => Math.round(f))).toEqual([40, 20, 10, 10]);
  });

  it('keeps every log at the minimum and gives the rest to the busy ones', () => {
    const { frequencies } = allocateFrequencies({
      weights: [100, 1e-6, 1e-6],
      costs: [1, 1, 1],
      budgetPerHour: 10,
      minFrequency: 1,
      maxFrequency: Infinity,
    });
    expect(frequencies[1]).toBe(1);
    expect(frequencies[2]).toBe(1);
    expect(frequencies[0]).toBeCloseTo(8, 5);
  });

  // When even the minimums do not fit, the floor falls to half an equal share and the rest follows the weights.
  it.each([
    { name: 'equal weights: round-robin', weights: [1, 1, 1, 1], costs: [1, 1, 1, 1], expected: [0.5, 0.5, 0.5, 0.5] },
    {
      name: 'one busy log takes the half above the floor',
      weights: [100, 1, 1, 1],
      costs: [1, 1, 1, 1],
      expected: [1.25, 0.25, 0.25, 0.25],
    },
    {
      name: 'two busy logs share it by weight',
      weights: [4, 1, 1e-6, 1e-6],
      costs: [1, 1, 1, 1],
      expected: [1.2, 0.3, 0.25, 0.25],
    },
    {
      name: 'a costly poll counts as several requests',
      weights: [1, 1, 1],
      costs: [2, 1, 1],
      expected: [0.5, 0.5, 0.5],
    },
  ])('oversubscribed budget ($name): nobody starves, busy logs still go first', ({ weights, costs, expected }) => {
    const { frequencies, minFrequency } = allocateFrequencies({
      weights,
      costs,
      budgetPerHour: 2,
      minFrequency: 1,
      maxFrequency: 60,
    });
    expect(minFrequency).toBeCloseTo((0.5 * 2) / costs.reduce((a, b) => a + b, 0), 9);
    frequencies.forEach((f, i) => expect(f).toBeCloseTo(expected[i] ?? NaN, 6));
  });

  // Follow-ups took part of the hour: the floor is judged against the budget with their share,
  // which it fits, so it holds (the follow-ups yield) instead of falling to half an equal share.
  it.each([
    { name: 'floor fits with the follow-ups share', floorBudgetPerHour: 5, floor: 1 },
    { name: 'floor does not fit even with it', floorBudgetPerHour: 3, floor: 0.25 },
    { name: 'no follow-ups', floorBudgetPerHour: undefined, floor: 0.25 },
  ])('follow-ups never make the floor oversubscribed ($name)', ({ floorBudgetPerHour, floor }) => {
    const { minFrequency, frequencies } = allocateFrequencies({
      weights: [100, 1, 1, 1],
      costs: [1, 1, 1, 1],
      budgetPerHour: 2,
      ...(floorBudgetPerHour === undefined ? {} : { floorBudgetPerHour }),
      minFrequency: 1,
      maxFrequency: 60,
    });
    expect(minFrequency).toBe(floor);
    for (const f of frequencies) expect(f).toBeGreaterThanOrEqual(floor);
  });

  it('counts a poll that takes several pages as several requests', () => {
    const { frequencies } = allocateFrequencies({
      weights: [1, 1],
      costs: [3, 1],
      budgetPerHour: 40,
      minFrequency: 0,
      maxFrequency: Infinity,
    });
    expect(3 * (frequencies[0] ?? 0) + (frequencies[1] ?? 0)).toBeCloseTo(40, 5);
  });
});

describe('expected delay', () => {
  it('square-root allocation reaches the analytic optimum (Σ√λ)² / (2·B·Σλ)', () => {
    const rates = [16, 4, 1, 1, 0.25];
    const budget = 30;
    const { frequencies } = allocateFrequencies({
      weights: rates.map(Math.sqrt),
      costs: rates.map(() => 1),
      budgetPerHour: budget,
      minFrequency: 0,
      maxFrequency: Infinity,
    });
    expect(expectedDelay(rates, frequencies).meanHours).toBeCloseTo(squareRootOptimumMeanHours(rates, budget), 6);
    // Round-robin is worse on skewed rates.
    const equal = rates.map(() => budget / rates.length);
    expect(expectedDelay(rates, equal).meanHours).toBeGreaterThan(squareRootOptimumMeanHours(rates, budget));
  });

  it('p95 of a regular poll every T hours is 0.95·T', () => {
    expect(expectedDelay([3], [2]).p95Hours).toBeCloseTo(0.95 * 0.5, 6);
  });
});

describe('chooseAlpha', () => {
  const zipf = (n: number, s: number): number[] => Array.from({ length: n }, (_, i) => 100 / Math.pow(i + 1, s));
  const input = (n: number) => ({
    costs: Array.from({ length: n }, () => 1),
    budgetPerHour: 400,
    minFrequency: 1,
    maxFrequency: 60,
  });

  it('takes the mean-optimal 0.5 when the rates are skewed enough that the tail does not suffer', () => {
    const choice = chooseAlpha(zipf(300, 1.5), input(300));
    expect(choice.alpha).toBe(0.5);
    expect(choice.expected.p95Hours).toBeLessThan(choice.roundRobin.p95Hours);
    expect(choice.expected.meanHours).toBeLessThan(choice.roundRobin.meanHours / 2);
  });

  it('backs off toward round-robin when a higher alpha would make the slowest changes wait longer', () => {
    const rates = zipf(300, 0.6);
    const choice = chooseAlpha(rates, input(300));
    expect(choice.alpha).toBeLessThan(0.5);
    expect(choice.expected.p95Hours).toBeLessThanOrEqual(choice.roundRobin.p95Hours);
    // 0.5 would have broken the p95 promise.
    const { frequencies } = allocateFrequencies({ ...input(300), weights: rates.map(Math.sqrt) });
    expect(expectedDelay(rates, frequencies).p95Hours).toBeGreaterThan(choice.roundRobin.p95Hours);
  });

  it('judges round-robin with its own budget: follow-ups taking a share make the choice stricter', () => {
    const rates = zipf(300, 1);
    const same = chooseAlpha(rates, input(300));
    // Follow-ups took 10 of the 400 requests an hour; round-robin would have had all 400.
    const fairer = chooseAlpha(rates, { ...input(300), budgetPerHour: 390, roundRobinBudgetPerHour: 400 });
    expect(fairer.roundRobin.p95Hours).toBeCloseTo(same.roundRobin.p95Hours, 6);
    expect(fairer.alpha).toBeLessThan(same.alpha);
    expect(fairer.expected.p95Hours).toBeLessThanOrEqual(fairer.roundRobin.p95Hours);
  });
});

describe('firstInFirstPollOrder', () => {
  const D = T0 + 60_000;
  const at = (deadline: number): FirstPoll => ({ deadline, cost: 1 });
  it.each([
    ['the only one', [at(D)], 0, true],
    ['the earliest deadline', [at(D + 1), at(D)], 1, true],
    ['a later deadline', [at(D + 1), at(D)], 0, false],
    ['a tie: the first given', [at(D), at(D), at(D)], 0, true],
    ['a tie: one given after another', [at(D), at(D), at(D)], 1, false],
  ] as const)('%s', (_name, firstPolls, i, first) => {
    expect(firstInFirstPollOrder(firstPolls, i)).toBe(first);
    // The others' starts are what they were once it is polled (and only then, when they depend on it).
    const others = latestFirstPollStarts(firstPolls, 4_000).filter((_, j) => j !== i);
    const after = latestFirstPollStarts(
      firstPolls.filter((_, j) => j !== i),
      4_000,
    );
    expect(after.every((start, j) => start === others[j])).toBe(first);
  });
});

describe('latestFirstPollStarts', () => {
  const D = T0 + 60_000;
  const at = (deadline: number, cost = 1): FirstPoll => ({ deadline, cost });
  it.each([
    ['nothing to spread', [], 4_000, []],
    ['one log starts a slot before its deadline', [at(D)], 4_000, [D - 4_000]],
    ['logs due together start one slot apart', [at(D), at(D), at(D)], 4_000, [D - 12_000, D - 8_000, D - 4_000]],
    ['earliest deadline first, whatever the order given', [at(D + 60_000), at(D)], 4_000, [D + 56_000, D - 4_000]],
    [
      'a deadline a moment after another pushes the earlier one back',
      [at(D), at(D + 1_000)],
      4_000,
      [D - 7_000, D - 3_000],
    ],
    ['a poll of several pages takes as many slots', [at(D), at(D, 3)], 1_000, [D - 4_000, D - 3_000]],
    ['more logs than slots before the deadline: starts in the past', [at(D), at(D)], 40_000, [D - 80_000, D - 40_000]],
    ['no budget (slot 0): each starts at its deadline', [at(D), at(D + 5)], 0, [D, D + 5]],
  ] as const)('%s', (_name, firstPolls, slotMs, expected) => {
    expect(latestFirstPollStarts(firstPolls, slotMs)).toEqual(expected);
  });
});

describe('PollScheduler first polls', () => {
  const config = scheduleConfigSchema.parse({});
  /** A log first watched at T0, so its first poll is due by T0 + 60 s; never polled. */
  const fresh = (objectId: string): WatchedLog => ({ ...watched('career', objectId), firstPollBy: T0 + 60_000 });
  /** A log polled `ago` ms before T0. */
  const polled = (objectId: string, ago: number): WatchedLog => ({
    ...watched('skill', objectId),
    lastPollAt: T0 - ago,
  });

  it('polls a log never polled at once when the budget is idle, not after firstPollWithinSeconds', () => {
    const scheduler = new PollScheduler({ config, minIntervalMs: 60_000, budget: { intervalMs: () => 4_000 } });
    scheduler.sync([fresh('new')]);
    expect(decide(scheduler, T0)).toMatchObject({ poll: { objectId: 'new' } });
  });

  it('keeps the deadline a restart found in the store: polled by it even while other logs are due', () => {
    // A process started at T0 + 50 s (a restart) sees the log's deadline of T0 + 60 s, and due logs.
    const start = T0 + 50_000;
    const scheduler = new PollScheduler({ config, minIntervalMs: 60_000, budget: { intervalMs: () => 4_000 } });
    const due = Array.from({ length: 20 }, (_, i) => polled(`due${i}`, 30 * 60_000));
    scheduler.sync([...due, fresh('new')]);
    const order: string[] = [];
    for (let t = start; t <= T0 + 60_000; t += 4_000) {
      const choice = decide(scheduler, t);
      if (!('poll' in choice)) continue;
      order.push(choice.poll.objectId);
      scheduler.recordPoll(choice.poll, t, { requests: 1, emittedPerformedAt: [] });
    }
    expect(order).toContain('new');
  });

  it('spreads the first polls of many new logs by the budget: all by their deadline, no slot left unused', () => {
    // 3,600 requests an hour: one slot a second. 40 new logs due within a minute, 50 logs polled
    // twenty minutes ago and due again: the new ones need 40 of the minute's 60 slots.
    const scheduler = new PollScheduler({ config, minIntervalMs: 60_000, budget: { intervalMs: () => 1_000 } });
    const fresh40 = Array.from({ length: 40 }, (_, i) => fresh(`new${i}`));
    const old50 = Array.from({ length: 50 }, (_, i) => polled(`old${i}`, 20 * 60_000));
    scheduler.sync([...old50, ...fresh40]);
    const firstPolledAt = new Map<string, number>();
    let idle = 0;
    for (let t = T0; t < T0 + 60_000; t += 1_000) {
      const choice = decide(scheduler, t);
      if (!('poll' in choice)) {
        idle++;
        continue;
      }
      if (choice.poll.objectId.startsWith('new')) firstPolledAt.set(choice.poll.objectId, t);
      scheduler.recordPoll(choice.poll, t, { requests: 1, emittedPerformedAt: [] });
    }
    expect(idle).toBe(0);
    expect(firstPolledAt.size).toBe(40);
    expect(Math.max(...firstPolledAt.values())).toBeLessThanOrEqual(T0 + 60_000);
  });

  it('a lowered firstPollWithinSeconds brings a kept deadline forward, never back', () => {
    const scheduler = new PollScheduler({
      config: { ...config, firstPollWithinSeconds: 10 },
      minIntervalMs: 60_000,
      budget: { intervalMs: () => 4_000 },
    });
    scheduler.sync([fresh('new')]);
    // A never-polled log's interval is anchored so that it ends at its first-poll deadline.
    const [candidate] = scheduler.candidates(T0);
    expect(candidate!.anchorAt + candidate!.intervalMs).toBe(T0 + 10_000);
  });
});

describe('PollScheduler', () => {
  const config = scheduleConfigSchema.parse({ firstPollWithinSeconds: 0 });

  it('keeps its candidates between decisions until a poll, the set of logs or a reallocation changes them', () => {
    const scheduler = new PollScheduler({ config, minIntervalMs: 60_000, budget: { intervalMs: () => 4_000 } });
    const logs = [watched('career', 'a'), watched('career', 'b'), watched('skill', 's')];
    scheduler.sync(logs);
    for (const w of logs) scheduler.recordPoll(w, T0, { requests: 1, emittedPerformedAt: [] });
    const first = scheduler.candidates(T0 + 1_000);
    // Every log polled and nothing changed: the same list, as fresh as a rebuilt one.
    expect(scheduler.candidates(T0 + 2_000)).toBe(first);
    scheduler.recordPoll(logs[0]!, T0 + 2_000, { requests: 1, emittedPerformedAt: [T0 + 1_500] });
    const afterPoll = scheduler.candidates(T0 + 3_000);
    expect(afterPoll).not.toBe(first);
    expect(afterPoll.find((c) => c.key === 'career:a')?.earliestAt).toBe(T0 + 2_000 + 60_000);
    // A reallocation (each minute) builds it again.
    expect(scheduler.candidates(T0 + 3_000 + 60_000)).not.toBe(afterPoll);
    scheduler.sync(logs.slice(1));
    expect(scheduler.candidates(T0 + 3_000 + 61_000).map((c) => c.key)).toEqual(['career:b', 'skill:s']);
  });

  it.each([
    ['one log replaced by another', 1],
    ['every log replaced', 26],
  ])('gives the slots of logs that left to the logs the same sync adds: %s', (_, replaced) => {
    const scheduler = new PollScheduler({ config, minIntervalMs: 60_000, budget: { intervalMs: () => 4_000 } });
    const capacity = (): number => (scheduler as unknown as { numbers: { capacity: number } }).numbers.capacity;
    const logs = Array.from({ length: 26 }, (_, i) => watched('skill', `s${i}`));
    scheduler.sync(logs);
    for (const w of logs) scheduler.recordPoll(w, T0, { requests: 3, emittedPerformedAt: [] });
    const kept = logs.slice(replaced);
    const added = Array.from({ length: replaced }, (_, i) => watched('career', `c${i}`));
    scheduler.sync([...kept, ...added]);
    expect(capacity()).toBe(26);
    // The logs that stayed keep their numbers, those added start afresh, in the order of the sync.
    const byKey = new Map(scheduler.candidates(T0 + 1_000).map((c) => [c.key, c]));
    expect([...byKey.keys()]).toEqual([...kept, ...added].map((w) => `${w.log}:${w.objectId}`));
    for (const w of kept) expect(byKey.get(`skill:${w.objectId}`)?.earliestAt).toBe(T0 + 60_000);
    for (const w of added) expect(byKey.get(`career:${w.objectId}`)?.earliestAt).toBe(Number.NEGATIVE_INFINITY);
  });

  it("after a poll of a log, renews that log's candidate alone, equal to the list built anew", () => {
    const scheduler = new PollScheduler({ config, minIntervalMs: 60_000, budget: { intervalMs: () => 4_000 } });
    const logs = [
      watched('career', 'a'),
      watched('career', 'b'),
      watched('skill', 's'),
      watched('identity_provider', ''),
    ];
    scheduler.sync(logs);
    for (const w of logs) scheduler.recordPoll(w, T0, { requests: 1, emittedPerformedAt: [] });
    let now = T0 + 1_000;
    for (let i = 0; i < 12; i++, now += 4_000) {
      const before = scheduler.candidates(now);
      const w = logs[i % logs.length]!;
      scheduler.recordPoll(w, now, { requests: 1 + (i % 2), emittedPerformedAt: i % 3 === 0 ? [now - 500] : [] });
      const after = scheduler.candidates(now);
      // The other logs' candidates are the same objects: nothing of theirs was built again.
      after.forEach((c, j) => {
        if (c.key !== `${w.log}:${w.objectId}`) expect(c).toBe(before[j]);
      });
      // And the list is what building it anew gives (the kept one dropped by hand).
      (scheduler as unknown as { kept: undefined }).kept = undefined;
      expect(scheduler.candidates(now)).toEqual(after);
    }
  });

  // The kept list renews the polled log's candidate alone: over hours of the decisions' own polls
  // (reallocations, refits, follow-ups of sessions, a pace that moves), it must stay what building
  // it anew gives, or a log whose candidate went stale could wait past its interval.
  it('keeps a list equal to one built anew over six hours of its own decisions, every log polled in time', () => {
    let intervalMs = 4_000;
    const adaptive = scheduleConfigSchema.parse({ policy: 'adaptive' });
    const scheduler = new PollScheduler({
      config: adaptive,
      minIntervalMs: 60_000,
      budget: { intervalMs: () => intervalMs },
      serviceNow: () => now,
    });
    const logs = [
      ...Array.from({ length: 20 }, (_, i) => watched('career', `c-${i}`)),
      ...Array.from({ length: 5 }, (_, i) => watched('skill', `s-${i}`)),
      watched('identity_provider', ''),
    ];
    scheduler.sync(logs);
    let now = T0;
    for (const w of logs) scheduler.recordPoll(w, now, { requests: 1, emittedPerformedAt: [] });
    const lastPolled = new Map(logs.map((w) => [`${w.log}:${w.objectId}`, now]));
    let longestGap = 0;
    let seed = 7;
    const random = (): number => ((seed = (seed * 48271) % 2147483647) - 1) / 2147483646;
    while (now < T0 + 6 * HOUR) {
      if (random() < 0.01) intervalMs = 3_000 + Math.floor(random() * 3_000);
      const decision = decide(scheduler, now);
      if ('wakeAt' in decision) {
        now = Math.max(now + 1, decision.wakeAt);
        continue;
      }
      const w = decision.poll;
      const key = `${w.log}:${w.objectId}`;
      longestGap = Math.max(longestGap, now - lastPolled.get(key)!);
      lastPolled.set(key, now);
      // Sessions on the busier careers: a few changes a poll, which start follow-ups.
      const changes = w.objectId < 'c-3' && random() < 0.5 ? [now - 30_000, now - 20_000] : [];
      scheduler.recordPoll(w, now, { requests: 1, emittedPerformedAt: changes });
      const kept = scheduler.candidates(now);
      (scheduler as unknown as { kept: undefined }).kept = undefined;
      expect(scheduler.candidates(now)).toEqual(kept);
      now += 1_000;
    }
    const maxIntervalMs = scheduleConfigSchema.parse({}).maxIntervalMinutes * 60_000;
    expect(longestGap).toBeLessThanOrEqual(maxIntervalMs);
  });

  it('keeps the candidates of logs never polled while the pace their first-poll starts were reckoned at holds', () => {
    let intervalMs = 4_000;
    const scheduler = new PollScheduler({
      config: { ...config, firstPollWithinSeconds: 600 },
      minIntervalMs: 60_000,
      budget: { intervalMs: () => intervalMs },
    });
    scheduler.sync([watched('career', 'a'), watched('career', 'b')]);
    const first = scheduler.candidates(T0);
    expect(first.every((c) => c.firstPollAt !== null)).toBe(true);
    expect(scheduler.candidates(T0 + 1_000)).toBe(first);
    // A slower pace leaves less time per first poll: the starts are reckoned again, earlier.
    intervalMs = 60_000;
    const slower = scheduler.candidates(T0 + 2_000);
    expect(slower).not.toBe(first);
    expect(slower[0]!.firstPollAt!).toBeLessThan(first[0]!.firstPollAt!);
  });

  it('keeps the first-poll starts while the pace moves a little, no later than the exact ones', () => {
    let intervalMs = 4_000;
    const scheduler = new PollScheduler({ config, minIntervalMs: 60_000, budget: { intervalMs: () => intervalMs } });
    const logs = Array.from({ length: 26 }, (_, i) => watched('career', `o${i}`));
    scheduler.sync(logs);
    scheduler.recordPoll(logs[0]!, T0, { requests: 1, emittedPerformedAt: [] });
    const first = scheduler.candidates(T0 + 1_000);
    const exact = (now: number): readonly LogCandidate[] => {
      (scheduler as unknown as { kept: undefined }).kept = undefined;
      return scheduler.candidates(now);
    };
    // The pace of a server's window moves with each request: a few tenths of a percent either way.
    for (const ms of [4_010, 3_995, 4_000]) {
      intervalMs = ms;
      expect(scheduler.candidates(T0 + 2_000)).toBe(first);
    }
    // A poll of a log polled before leaves the chain of first polls as it was: its candidate alone is new.
    scheduler.recordPoll(logs[0]!, T0 + 30_000, { requests: 1, emittedPerformedAt: [] });
    const afterPoll = scheduler.candidates(T0 + 31_000);
    afterPoll.forEach((c, j) => {
      if (c.key !== 'career:o0') expect(c).toBe(first[j]);
    });
    expect(exact(T0 + 31_000)).toEqual(afterPoll);
    // A pace slower than the one reckoned at would make the starts late: they are reckoned again.
    intervalMs = 4_100;
    const slower = scheduler.candidates(T0 + 32_000);
    expect(slower).not.toBe(afterPoll);
    expect(exact(T0 + 32_000)).toEqual(slower);
  });

  it('after the first poll of the log first in the chain, keeps the other candidates, like the list built anew', () => {
    const scheduler = new PollScheduler({ config, minIntervalMs: 60_000, budget: { intervalMs: () => 4_000 } });
    const logs = Array.from({ length: 6 }, (_, i) => watched('career', `o${i}`));
    scheduler.sync(logs);
    const exact = (now: number): readonly LogCandidate[] => {
      (scheduler as unknown as { kept: undefined }).kept = undefined;
      return scheduler.candidates(now);
    };
    let now = T0 + 1_000;
    for (const w of logs) {
      const before = scheduler.candidates(now);
      const next = decide(scheduler, now);
      expect('poll' in next && next.poll).toBe(w);
      scheduler.recordPoll(w, now, { requests: 1, emittedPerformedAt: [] });
      const after = scheduler.candidates(now);
      after.forEach((c, j) => {
        if (c.key !== `career:${w.objectId}`) expect(c).toBe(before[j]);
      });
      const anew = exact(now);
      after.forEach((c, j) => {
        expect({ ...c, firstPollAt: null }).toEqual({ ...anew[j]!, firstPollAt: null });
        if (c.firstPollAt !== null) expect(Math.abs(c.firstPollAt - anew[j]!.firstPollAt!)).toBeLessThanOrEqual(2_000);
      });
      now += 4_000;
    }
    // A first poll out of order (the last in the chain) moves the starts before it: built anew.
    const more = [watched('career', 'p0'), watched('career', 'p1')];
    scheduler.sync([...logs, ...more]);
    const before = scheduler.candidates(now);
    scheduler.recordPoll(more[1]!, now, { requests: 1, emittedPerformedAt: [] });
    const after = scheduler.candidates(now);
    expect(after.find((c) => c.key === 'career:p0')!.firstPollAt).toBeGreaterThan(
      before.find((c) => c.key === 'career:p0')!.firstPollAt!,
    );
    expect(exact(now)).toEqual(after);
  });

  function pollAll(
    scheduler: PollScheduler,
    clock: ManualClock,
    hours: number,
    changes: (log: WatchedLog, from: number, to: number) => number[],
    /** A slot for one poll this often (the budget's pace). */
    slotMs = 10_000,
  ) {
    const counts = new Map<string, number>();
    const last = new Map<string, number>();
    for (let t = clock.now(); t < T0 + hours * HOUR; t += slotMs) {
      const choice = decide(scheduler, t);
      if (!('poll' in choice)) continue;
      const key = `${choice.poll.log}:${choice.poll.objectId}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
      scheduler.recordPoll(choice.poll, t, {
        requests: 1,
        emittedPerformedAt: changes(choice.poll, last.get(key) ?? T0, t),
      });
      last.set(key, t);
    }
    return counts;
  }

  it('polls busy logs more often than quiet ones, roughly as the square root of their rates', () => {
    const clock = new ManualClock(T0);
    // 360 requests per hour for polls.
    const scheduler = new PollScheduler({
      config: { ...config, alpha: 0.5, followUpPolls: 0 },
      minIntervalMs: 0,
      budget: { intervalMs: () => 10_000 },
    });
    const logs = [
      watched('career', 'hot'),
      watched('career', 'warm'),
      ...Array.from({ length: 20 }, (_, i) => watched('career', `cold${i}`)),
    ];
    scheduler.sync(logs);
    const rate = (w: WatchedLog): number => (w.objectId === 'hot' ? 64 : w.objectId === 'warm' ? 4 : 0.25);
    // Changes at exactly the log's rate: the fractional part carries over to the next poll.
    const carry = new Map<string, number>();
    const counts = pollAll(scheduler, clock, 24, (w, from, to) => {
      const due = (carry.get(w.objectId) ?? 0) + ((to - from) / HOUR) * rate(w);
      const n = Math.floor(due);
      carry.set(w.objectId, due - n);
      return Array.from({ length: n }, (_, i) => from + ((i + 0.5) * (to - from)) / n);
    });
    const hot = counts.get('career:hot') ?? 0;
    const warm = counts.get('career:warm') ?? 0;
    const cold = counts.get('career:cold0') ?? 0;
    expect(hot / warm).toBeGreaterThan(2.5);
    expect(hot / warm).toBeLessThan(6);
    expect(warm / cold).toBeGreaterThan(2);
    expect(cold).toBeGreaterThanOrEqual(24);
  });

  it(
    'a first poll that read history sets the rate at once, and its extra page is not taken for ' + 'the cost of a poll',
    () => {
      const plan = (busyRequests: number) => {
        const scheduler = new PollScheduler({
          config: { ...config, alpha: 0.5, followUpPolls: 0 },
          minIntervalMs: 0,
          budget: { intervalMs: () => 10_000 },
        });
        const busy = watched('career', 'busy');
        const quiet = watched('career', 'quiet');
        scheduler.sync([busy, quiet]);
        const week = { fromMs: T0 - 168 * HOUR, toMs: T0 };
        // Ten independent changes an hour (six minutes apart: each its own session) for a week.
        const changes = Array.from({ length: 1680 }, (_, i) => week.fromMs + (i + 0.5) * 360_000);
        // The planned rate is what the store keeps for `plan`, `status` and the metrics.
        const busyRow = scheduler.recordPoll(busy, T0, {
          requests: busyRequests,
          emittedPerformedAt: [],
          history: { ...week, performedAt: changes },
        });
        const quietRow = scheduler.recordPoll(quiet, T0, {
          requests: 1,
          emittedPerformedAt: [],
          history: { ...week, performedAt: [] },
        });
        const busyInterval = scheduler.candidates(T0).find((c) => c.key === 'career:busy')!.intervalMs;
        return { busyRate: busyRow!.plannedRate, quietRate: quietRow!.plannedRate, busyInterval };
      };
      const withProbe = plan(2);
      expect(withProbe.busyRate).toBeGreaterThan(8);
      expect(withProbe.busyRate).toBeLessThan(12);
      expect(withProbe.quietRate).toBeLessThan(0.05);
      expect(withProbe.busyInterval).toBeCloseTo(plan(1).busyInterval, 6);
    },
  );

  it('round-robin polls every log equally often and reports alpha 0, whatever alpha says', () => {
    const clock = new ManualClock(T0);
    const scheduler = new PollScheduler({
      config: { ...config, policy: 'round-robin' },
      minIntervalMs: 0,
      budget: { intervalMs: () => 10_000 },
    });
    scheduler.sync([watched('career', 'hot'), watched('career', 'cold')]);
    const counts = pollAll(scheduler, clock, 2, (w, from, to) =>
      w.objectId === 'hot' ? Array.from({ length: Math.round((to - from) / 60_000) }, () => to - 1) : [],
    );
    expect(Math.abs((counts.get('career:hot') ?? 0) - (counts.get('career:cold') ?? 0))).toBeLessThanOrEqual(1);
    expect(scheduler.snapshot(T0 + 2 * HOUR).alpha).toBe(0);
  });

  it('polls every log at least every maxIntervalMinutes, however quiet', () => {
    const clock = new ManualClock(T0);
    const scheduler = new PollScheduler({
      config: { ...config, maxIntervalMinutes: 30 },
      minIntervalMs: 0,
      budget: { intervalMs: () => 10_000 },
    });
    const logs = [watched('career', 'hot'), ...Array.from({ length: 10 }, (_, i) => watched('skill', `quiet${i}`))];
    scheduler.sync(logs);
    const counts = pollAll(scheduler, clock, 6, (w, from, to) =>
      w.objectId === 'hot' ? Array.from({ length: Math.round((to - from) / 6_000) }, () => to - 1) : [],
    );
    for (let i = 0; i < 10; i++) expect(counts.get(`skill:quiet${i}`)).toBeGreaterThanOrEqual(12);
  });

  // An oversubscribed day, checked against the rule of docs/scheduling.md worked out by hand for
  // it, not against allocateFrequencies' output, which would move with any change to it. The rule:
  // the floor falls to half an equal share; the other half of the budget, less what the floor
  // gives the quiet logs, goes to the busy ones by the square root of their rates. Round-robin
  // runs the same day as the baseline the floor is promised against.
  it('with more logs than the budget can poll at maxIntervalMinutes, polls each log as the rule says: quiet ones at half of round-robin, the rest by the square root of their rates', () => {
    // 36 polls per hour for 100 logs: the 60-minute floor would take 100, 2.8 times the budget. The
    // cost of a decision grows with the logs and the number of decisions with the budget, so the day
    // is simulated at a tenth of both (1,000 logs at 360 an hour took 8 CPU-s): the same
    // oversubscription, the same rates.
    const slotMs = 100_000;
    const budgetPerHour = HOUR / slotMs;
    const busy = [60, 8, 6, 4, 3, 2, 1.5, 1, 0.75, 0.5];
    const rates = [...busy, ...Array.from({ length: 100 - busy.length }, () => 0)];
    const quiet = rates.flatMap((r, i) => (r === 0 ? [i] : []));
    const logs = rates.map((_, i) => watched('career', `log${i}`));
    const rateOf = new Map(logs.map((w, i) => [`${w.log}:${w.objectId}`, rates[i]!]));
    const alpha = 0.5;

    // The rule by hand: a floor of 36 / 100 / 2 = 0.18 polls an hour; the busy logs share
    // 36 - 90 x 0.18 = 19.8 by the square root of their rates, k = 19.8 / 21.97 = 0.90 (the least
    // of them, 0.9 x sqrt(0.5) = 0.64, is above the floor, so no busy log is held to it).
    const floor = budgetPerHour / rates.length / 2;
    const k = (budgetPerHour - quiet.length * floor) / busy.reduce((sum, r) => sum + Math.sqrt(r), 0);
    expect(k * Math.sqrt(Math.min(...busy))).toBeGreaterThan(floor);
    const rule = rates.map((r) => (r === 0 ? floor : k * Math.sqrt(r)));
    expect(floor).toBeCloseTo(0.18, 9);
    expect(k).toBeCloseTo(0.901, 3);

    // The allocation's pure function, against the rule.
    const allocation = allocateFrequencies({
      weights: rates.map((r) => allocationWeight(r, 1, alpha)),
      costs: rates.map(() => 1),
      budgetPerHour,
      minFrequency: 1,
      maxFrequency: Number.POSITIVE_INFINITY,
    });
    expect(allocation.minFrequency, 'allocation: the floor').toBeCloseTo(floor, 9);
    for (const [i, f] of allocation.frequencies.entries())
      expect(f, `allocation: log${i} (rate ${rates[i]}/h)`).toBeCloseTo(rule[i]!, 6);

    // The scheduler's day and round-robin's. The first hours poll every log once (100 first polls
    // take 2.8 h of the budget): the 20 hours after them are compared.
    const from = T0 + 4 * HOUR;
    const day = (policy: 'adaptive' | 'round-robin') => {
      const scheduler = new PollScheduler({
        config: { ...config, policy, alpha, followUpPolls: 0 },
        minIntervalMs: 0,
        budget: { intervalMs: () => slotMs },
        knownRates: (key) => rateOf.get(key),
      });
      scheduler.sync(logs);
      const times = logs.map((): number[] => []);
      const record = (w: WatchedLog, _since: number, at: number): number[] => {
        times[logs.indexOf(w)]!.push(at);
        return [];
      };
      pollAll(scheduler, new ManualClock(T0), 4, record, slotMs);
      pollAll(scheduler, new ManualClock(from), 24, record, slotMs);
      return {
        scheduler,
        polled: times.map((t) => t.filter((at) => at >= from).length),
        /** Per log, the most slots between a poll in those hours and the one before it. */
        longestWait: times.map((t) =>
          Math.max(...t.flatMap((at, j) => (j > 0 && at >= from ? [(at - t[j - 1]!) / slotMs] : []))),
        ),
      };
    };
    const ours = day('adaptive');
    const roundRobin = day('round-robin');
    expect(ours.scheduler.snapshot(T0 + 24 * HOUR).alpha, 'the alpha in use').toBe(alpha);
    for (const [i, count] of ours.polled.entries()) {
      const expected = 20 * rule[i]!;
      expect(
        Math.abs(count - expected),
        `the day: log${i} (rate ${rates[i]}/h) ${count} polls, the rule ${expected.toFixed(1)}`,
      ).toBeLessThanOrEqual(Math.max(1.5, 0.1 * expected));
    }
    // Round-robin polls each log every 100 slots (7.2 times in those hours). The promise: every
    // quiet log at least half as often, which the floor keeps to the slot (a log at the floor goes
    // when it starves, two minutes short of its interval of 200 slots; one slot more lets two
    // starve at once); and the floor no higher, the other half of the budget going to the busy
    // logs, so the quiet logs' longest wait is that interval (a slot nobody is due for goes to a
    // log early, so their other waits are shorter).
    expect(Math.max(...roundRobin.longestWait), 'round-robin: the longest wait').toBe(rates.length);
    const quietLongest = Math.max(...quiet.map((i) => ours.longestWait[i]!));
    expect(quietLongest, 'the quiet logs: at least half as often as round-robin').toBeLessThanOrEqual(
      2 * rates.length + 1,
    );
    expect(quietLongest, 'the quiet logs: a floor of half, not more').toBeGreaterThanOrEqual(0.95 * 2 * rates.length);
  });

  it('follows up a session in progress: polls again after pollIntervalSeconds, until a poll finds nothing new', () => {
    const scheduler = new PollScheduler({
      config: { ...config, maxIntervalMinutes: 600 },
      minIntervalMs: 60_000,
      budget: { intervalMs: () => 10_000 },
    });
    const logs = Array.from({ length: 30 }, (_, i) => watched('career', `c${i}`));
    scheduler.sync(logs);
    for (const w of logs) scheduler.recordPoll(w, T0, { requests: 1, emittedPerformedAt: [] });
    // Two hours later, c7 shows a session of eight changes a few seconds apart, c8 one change.
    const t = T0 + 2 * HOUR;
    const session = (end: number): number[] => Array.from({ length: 8 }, (_, i) => end - i * 5_000);
    for (const w of logs) {
      const found = w.objectId === 'c7' ? session(t - 1_000) : w.objectId === 'c8' ? [t - 1_000] : [];
      scheduler.recordPoll(w, t, { requests: 1, emittedPerformedAt: found });
    }
    // Before the minimum interval nothing is due; then c7 goes first though every log waited as long.
    expect(decide(scheduler, t + 30_000)).toEqual({ wakeAt: t + 60_000 });
    const next = decide(scheduler, t + 60_000);
    expect('poll' in next && next.poll.objectId).toBe('c7');
    // The follow-up finds more of the session: another one follows.
    scheduler.recordPoll(logs[7]!, t + 60_000, { requests: 1, emittedPerformedAt: session(t + 55_000) });
    const again = decide(scheduler, t + 120_000);
    expect('poll' in again && again.poll.objectId).toBe('c7');
    // It finds nothing new: the session is over and c7 waits its regular turn like the others.
    scheduler.recordPoll(logs[7]!, t + 120_000, { requests: 1, emittedPerformedAt: [] });
    const after = decide(scheduler, t + 180_000);
    expect('poll' in after && after.poll.objectId).not.toBe('c7');
  });

  // observe dated the changes no later than our clock: with the service five minutes ahead, the
  // newest change stood further back than the service's clock minus a session gap, and no follow-up
  // was ever sent.
  it('follows up a session in progress with the service clock minutes ahead of ours', () => {
    const ahead = 5 * 60_000;
    let now = T0;
    const scheduler = new PollScheduler({
      config: { ...config, maxIntervalMinutes: 600 },
      minIntervalMs: 60_000,
      budget: { intervalMs: () => 10_000 },
      serviceNow: () => now + ahead,
    });
    const logs = Array.from({ length: 30 }, (_, i) => watched('career', `c${i}`));
    scheduler.sync(logs);
    for (const w of logs) scheduler.recordPoll(w, now, { requests: 1, emittedPerformedAt: [] });
    now = T0 + 2 * HOUR;
    const t = now;
    // Eight changes a few seconds apart on c7, dated on the service's clock.
    const session = (end: number): number[] => Array.from({ length: 8 }, (_, i) => end + ahead - i * 5_000);
    for (const w of logs)
      scheduler.recordPoll(w, t, { requests: 1, emittedPerformedAt: w.objectId === 'c7' ? session(t - 1_000) : [] });
    const next = decide(scheduler, t + 60_000);
    expect('poll' in next && next.poll.objectId).toBe('c7');
    now = t + 60_000;
    scheduler.recordPoll(logs[7]!, now, { requests: 1, emittedPerformedAt: session(t + 55_000) });
    const again = decide(scheduler, t + 120_000);
    expect('poll' in again && again.poll.objectId).toBe('c7');
  });

  it('does not follow up a log whose changes are independent (one change, no session)', () => {
    const scheduler = new PollScheduler({ config, minIntervalMs: 60_000, budget: { intervalMs: () => 10_000 } });
    const logs = Array.from({ length: 5 }, (_, i) => watched('career', `c${i}`));
    scheduler.sync(logs);
    for (const w of logs) scheduler.recordPoll(w, T0, { requests: 1, emittedPerformedAt: [] });
    const t = T0 + 3_600_000;
    // c0 is polled last, so it has waited least; a follow-up would put it first all the same.
    for (const w of logs) {
      const order = w.objectId === 'c0' ? 4 : Number(w.objectId.slice(1)) - 1;
      scheduler.recordPoll(w, t + order * 1_000, {
        requests: 1,
        emittedPerformedAt: w.objectId === 'c0' ? [t - 1_000] : [],
      });
    }
    const next = decide(scheduler, t + 70_000);
    expect('poll' in next && next.poll.objectId).toBe('c1');
  });

  it('follows the read budget: fewer polls per hour when the server says the bucket is shared', () => {
    const clock = new ManualClock(T0);
    const budget = new ReadBudget(
      { readsPerHour: 1000, reserve: 0.1, retryAfterFallbackSeconds: 60, maxServerPauseSeconds: 3600 },
      clock,
    );
    const scheduler = new PollScheduler({ config, minIntervalMs: 0, budget });
    // An allowance of 900 (1,000 less the reserve), paced one under it: 899 an hour.
    expect(scheduler.pollBudgetPerHour(T0)).toBeCloseTo(899, 0);
    // Another client spent 600 of this window's 1,000: 300 left less the 100 reserve, over 30 minutes.
    budget.observe({
      status: 200,
      requestId: undefined,
      limit: 1000,
      remaining: 300,
      resetSeconds: 1800,
      retryAfterSeconds: undefined,
      serverDate: T0,
      receivedAt: T0,
    });
    expect(scheduler.pollBudgetPerHour(T0)).toBeCloseTo(400, 0);
  });
});
