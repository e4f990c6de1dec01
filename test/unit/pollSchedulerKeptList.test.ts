import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { LogKind } from '../../src/logs.js';
import type { LogCandidate } from '../../src/schedule/nextAction.js';
import { freeSlotDecision } from '../support/freeSlotDecision.js';
import { latestFirstPollStarts } from '../../src/schedule/pollAllocation.js';
import { PollScheduler } from '../../src/schedule/pollScheduler.js';
import { scheduleConfigSchema } from '../../src/schedule/scheduleConfig.js';
import { Random } from '../../src/simulator/random.js';
import type { RateEstimateRow, WatchedLog } from '../../src/store/storeRecords.js';

const T0 = Date.UTC(2026, 0, 1, 8);
const HOUR = 3_600_000;
const FIRST_POLL_WITHIN_MS = 600_000;

/** Draws in [0, 1) from the simulator's seeded generator: the same seed gives the same run. */
function seeded(seed: number): () => number {
  const random = Random.derive('pollSchedulerKeptList', seed);
  return () => random.next();
}

const KINDS: readonly LogKind[] = ['career', 'skill', 'identity_provider'];

function watched(log: LogKind, objectId: string, createdAt: number, firstPollBy: number): WatchedLog {
  return {
    log,
    objectId,
    origin: 'config',
    status: 'active',
    statusReason: null,
    coverageStart: createdAt,
    windowEnd: createdAt,
    sortOrder: null,
    lastPollAt: null,
    lastSuccessAt: null,
    lastError: null,
    consecutiveFailures: 0,
    nextPollAt: createdAt,
    entriesIngested: 0,
    createdAt,
    firstPollBy,
  };
}

const key = (w: WatchedLog): string => `${w.log}:${w.objectId}`;

/** Poll costs learned before a restart, for every other log: a chain's cost is not its length. */
const RESTORED_COSTS = [0.2, 2.5, 7, 1.3] as const;
const RESTORED = 2_000;
const restoredCost = (objectId: string): number | undefined => {
  const i = Number(objectId.slice(1));
  return i < RESTORED && i % 2 === 0 ? RESTORED_COSTS[(i / 2) % RESTORED_COSTS.length] : undefined;
};
function restoredRows(): RateEstimateRow[] {
  return KINDS.flatMap((log) =>
    Array.from({ length: RESTORED }, (_, i) => `o${i}`).flatMap((objectId) => {
      const pollCost = restoredCost(objectId);
      return pollCost === undefined
        ? []
        : [
            {
              log,
              objectId,
              events: 0,
              hours: 0,
              sessions: 0,
              lastEventAt: null,
              updatedAt: null,
              pollCost,
              plannedRate: null,
              nextPollAt: null,
            },
          ];
    }),
  );
}

/**
 * One randomised run: a scheduler that keeps its list (`kept`) and one that builds it anew at
 * every ask (`fresh`) get the same syncs, polls and paces; the loop's decisions follow the kept
 * one. At every step the kept list must name exactly the logs watched, equal the fresh list in
 * everything but the first-poll starts, and each start must be no later than the exact one (the
 * chain of never-polled logs at the slot of now) and at most half a slot of now earlier. Every
 * other log has a poll cost restored from before a restart, so a chain's cost is not its length.
 */
function run(seed: number, steps: number): { decisions: number; firstPolls: number } {
  const random = seeded(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const config = scheduleConfigSchema.parse({ firstPollWithinSeconds: FIRST_POLL_WITHIN_MS / 1000 });
  let intervalMs = 4_000;
  let sanePace = intervalMs;
  const deps = { config, minIntervalMs: 60_000, budget: { intervalMs: () => intervalMs } };
  const kept = new PollScheduler(deps);
  const fresh = new PollScheduler(deps);
  const rows = restoredRows();
  kept.restore(rows);
  fresh.restore(rows);
  const dropKept = (): void => {
    (fresh as unknown as { kept: undefined }).kept = undefined;
  };
  let now = T0;
  let next = 0;
  const active = new Map<string, WatchedLog>();
  const polledOnce = new Set<string>();
  // Half the batches share one deadline, as discovery's do: a tight chain, whose first start moves
  // by the chain's whole cost times a change of the slot.
  const add = (n: number): void => {
    const batchDeadline = random() < 0.5 ? now + FIRST_POLL_WITHIN_MS : undefined;
    for (let i = 0; i < n; i++) {
      const deadline = batchDeadline ?? now + Math.floor(random() * FIRST_POLL_WITHIN_MS);
      const w = watched(pick(KINDS), `o${next++}`, now, deadline);
      active.set(key(w), w);
    }
  };
  const sync = (): void => {
    kept.sync([...active.values()]);
    fresh.sync([...active.values()]);
  };
  add(1 + Math.floor(random() * 30));
  sync();
  let decisions = 0;
  let firstPolls = 0;
  for (let step = 0; step < steps; step++) {
    const r = random();
    if (r < 0.25) {
      // The pace: small moves about a sane one (a window's few tenths of a percent, a few percent
      // either way, around the hold bound), orders of magnitude (a 429, the budget spent), and
      // for one step at a time, nonsense.
      const move = random();
      if (move < 0.05) intervalMs = pick([Number.NaN, Number.POSITIVE_INFINITY, 0, -5, 1e-12, 1e12]);
      else {
        if (move < 0.15) sanePace = sanePace * pick([0.001, 0.1, 10, 1000]);
        else if (move < 0.2) sanePace = 4_000;
        else sanePace = sanePace * (1 + (random() - 0.5) * pick([0.006, 0.02, 0.06]));
        sanePace = Math.min(3_600_000, Math.max(1, sanePace));
        intervalMs = sanePace;
      }
    } else if (r < 0.3) {
      add(1 + Math.floor(random() * pick([5, 40])));
      sync();
    } else if (r < 0.34 && active.size > 1) {
      active.delete(pick([...active.keys()]));
      sync();
    } else if (r < 0.37) {
      // A clock step: forward by hours, or back.
      now += pick([3 * HOUR, -30_000, -2 * HOUR, 61_000]);
    } else if (r < 0.41 && active.size > 0) {
      // A log polled out of the decision's order (it was in backoff or in flight), or a poll that failed.
      const w = pick([...active.values()]);
      const result = random() < 0.3 ? undefined : { requests: 1 + Math.floor(random() * 3), emittedPerformedAt: [] };
      if (result && !polledOnce.has(key(w))) firstPolls++;
      if (result) polledOnce.add(key(w));
      kept.recordPoll(w, now, result);
      fresh.recordPoll(w, now, result);
    } else {
      now += Math.floor(random() * 8_000);
      const list = kept.candidates(now);
      dropKept();
      const anew = fresh.candidates(now);
      check(list, anew, kept, fresh, active, now);
      const action = freeSlotDecision(now, list);
      decisions++;
      if ('launch' in action && action.launch === 'poll') {
        const w = active.get(action.key)!;
        const emitted = random() < 0.2 ? [now - Math.floor(random() * 60_000)] : [];
        const result =
          random() < 0.1 ? undefined : { requests: 1 + Math.floor(random() * 2), emittedPerformedAt: emitted };
        if (result && !polledOnce.has(key(w))) firstPolls++;
        if (result) polledOnce.add(key(w));
        kept.recordPoll(w, now, result);
        fresh.recordPoll(w, now, result);
      }
    }
  }
  return { decisions, firstPolls };
}

function check(
  list: readonly LogCandidate[],
  anew: readonly LogCandidate[],
  kept: PollScheduler,
  fresh: PollScheduler,
  active: ReadonlyMap<string, WatchedLog>,
  now: number,
): void {
  // No kept candidate names a removed log, none is missing, the list is no longer than the logs.
  expectEqual(list.map((c) => c.key).sort(), [...active.keys()].sort());
  expectEqual(
    list.map((c) => ({ ...c, firstPollAt: c.firstPollAt === null })),
    anew.map((c) => ({ ...c, firstPollAt: c.firstPollAt === null })),
  );
  const perHour = fresh.pollBudgetPerHour(now);
  expect(kept.pollBudgetPerHour(now)).toBe(perHour);
  const slotMs = Number.isFinite(perHour) ? HOUR / perHour : 0;
  const never = anew.filter((c) => c.firstPollAt !== null);
  const exact = latestFirstPollStarts(
    never.map((c) => {
      const w = active.get(c.key)!;
      return {
        deadline: Math.min(w.firstPollBy, w.createdAt + FIRST_POLL_WITHIN_MS),
        cost: restoredCost(w.objectId) ?? 1,
      };
    }),
    slotMs,
  );
  const exactByKey = new Map(never.map((c, i) => [c.key, exact[i]!]));
  const slack = 1e-6 * Math.max(1, Math.abs(now));
  const wrong: string[] = [];
  for (const c of list) {
    if (c.firstPollAt === null) continue;
    const e = exactByKey.get(c.key)!;
    if (!(c.firstPollAt <= e + slack)) wrong.push(`${c.key}: ${c.firstPollAt} later than the exact start ${e}`);
    if (!(c.firstPollAt >= e - 0.5 * slotMs - slack))
      wrong.push(`${c.key}: ${c.firstPollAt} more than half a slot (${slotMs} ms) before the exact start ${e}`);
  }
  expect(wrong).toEqual([]);
}

/**
 * `expect(actual).toEqual(expected)`, asked only when the two differ: an expectation costs far more
 * than the comparison, and the expectations of each candidate at each step were 84% of the run.
 */
function expectEqual<T>(actual: T, expected: T): void {
  if (!isDeepStrictEqual(actual, expected)) expect(actual).toEqual(expected);
}

describe('PollScheduler kept candidates against a list built anew, seeded', () => {
  // One seed in the suite (5 s): each of the three breakages tried (docs/scaling.md) failed every
  // one of ten seeds; more are a change of this list away.
  it.each([1])('seed %i', (seed) => {
    const { decisions, firstPolls } = run(seed, 2_000);
    expect(decisions).toBeGreaterThan(700);
    expect(firstPolls).toBeGreaterThan(10);
  });
});

describe('PollScheduler first polls of a tenant with 6,001 new logs', () => {
  // A pace that slows after the chain has begun makes its last polls late by up to the chain's
  // length times the change (539 ms here with the pace wavering 98.7-99.3 ms, on 7eead28 too):
  // the starts are the latest that serve at the pace of now. Here it wavers inside the band
  // the kept starts hold in (a 12,000th of a slot each way), so the list is kept across most moves.
  it('polls every one by its deadline while the pace wavers a little around a slot that only just suffices', () => {
    const random = seeded(6_001);
    const config = scheduleConfigSchema.parse({ firstPollWithinSeconds: 600 });
    // 6,001 first polls in 600 s need a slot under 99.98 ms; the pace wavers by 3 µs either way.
    let intervalMs = 99;
    const scheduler = new PollScheduler({ config, minIntervalMs: 60_000, budget: { intervalMs: () => intervalMs } });
    const logs = Array.from({ length: 6_001 }, (_, i) => watched('career', `o${i}`, T0, T0 + 600_000));
    scheduler.sync(logs);
    const byKey = new Map(logs.map((w) => [key(w), w]));
    const firstPolledAt = new Map<string, number>();
    let now = T0;
    while (firstPolledAt.size < logs.length && now < T0 + 700_000) {
      const action = freeSlotDecision(now, scheduler.candidates(now));
      if (!('launch' in action && action.launch === 'poll')) throw new Error(`unexpected ${JSON.stringify(action)}`);
      if (!firstPolledAt.has(action.key)) firstPolledAt.set(action.key, now);
      scheduler.recordPoll(byKey.get(action.key)!, now, { requests: 1, emittedPerformedAt: [] });
      now += intervalMs;
      intervalMs = 99 + (random() - 0.5) * 0.006;
    }
    expect(firstPolledAt.size).toBe(logs.length);
    expect(Math.max(...firstPolledAt.values())).toBeLessThanOrEqual(T0 + 600_000);
  });
});
