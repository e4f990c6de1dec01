import type { ScheduleConfig } from './scheduleConfig.js';

/**
 * How many polls per hour each log gets, and what delay that buys: the arithmetic of the
 * scheduler and of `changefeed plan`, kept pure so it can be tested and printed without polling.
 */

export interface AllocationInput {
  /** Relative weight of each log: rate^alpha (1 for round-robin). */
  weights: readonly number[];
  /** Requests one poll of each log costs on average (pages). */
  costs: readonly number[];
  /** Requests per hour the polls may spend. */
  budgetPerHour: number;
  /** Polls per hour every log gets at least (1 / maxInterval). */
  minFrequency: number;
  /** Polls per hour no log exceeds (1 / pollIntervalSeconds; Infinity when that is 0). */
  maxFrequency: number;
  /**
   * The budget the floor is judged against: `budgetPerHour` plus what follow-up polls took.
   * Follow-ups are discretionary and yield to the floor, so they never make it oversubscribed.
   */
  floorBudgetPerHour?: number;
  /** The quiet logs' pull toward round-robin's p95 (`chooseAlpha`); absent: frequency ∝ weight. */
  tailBound?: TailBound | undefined;
}

/**
 * The square-root law with the expected p95 held to a bound d (round-robin's): the allocation that
 * minimises the mean delay Σλ/(2f) subject to the budget Σc·f = B and to at most 5% of the changes
 * waiting longer than d (P(D > d) = Σλ·max(0, 1 − d·f) / Σλ). The problem is convex in f; with
 * multipliers μ (budget) and ν (tail), a log with x = λ/c gets
 *
 *     f = √(x / 2μ)                          where that is at least 1/d (the square-root law),
 *     f = min(1/d, √(x / 2(μ − ν·d·x)))      below it (pulled up toward 1/d, at 1/d once ν·d·x ≥ μ).
 *
 * With weight w = √x and scale k = 1/√(2μ) the second line is k·w / √(1 − pull·w²), pull = ν·d/μ.
 * The pull spends the tail's 5% on the quietest logs, whose few changes wait longest whatever is
 * done, and brings the logs just beyond the bound to it, where the power law (α < 0.5) would
 * instead take the same polls from every busy log.
 */
export interface TailBound {
  /** 1/d: the frequency that polls a log within the bound; a pulled log never goes above it. */
  boundFrequency: number;
  /** ν·d/μ, per unit of weight² (cost per change): how hard logs below the bound are pulled up. */
  pull: number;
}

/** A log's polls per hour at `scale`: scale × weight, pulled toward the tail bound, clamped to [min, max]. */
export function plannedFrequency(
  weight: number,
  scale: number,
  min: number,
  max: number,
  tailBound?: TailBound,
): number {
  let frequency = scale * weight;
  if (tailBound && frequency < tailBound.boundFrequency) {
    const rest = 1 - tailBound.pull * weight * weight;
    frequency = rest > 0 ? Math.min(tailBound.boundFrequency, frequency / Math.sqrt(rest)) : tailBound.boundFrequency;
  }
  return clamp(frequency, min, max);
}

export interface Allocation {
  /** Polls per hour = plannedFrequency(weight, scale, minFrequency, max, tailBound). */
  scale: number;
  /** The floor in force: the input's, or the lower one of an oversubscribed budget. */
  minFrequency: number;
  frequencies: number[];
}

/**
 * When the budget cannot poll every log at `minFrequency`, the floor falls to this share of an
 * equal division: every log is still polled at least half as often as round-robin would poll it,
 * and the other half of the budget follows the weights, so busy logs are not held to the pace of
 * thousands of quiet ones.
 */
export const OVERSUBSCRIBED_FLOOR_SHARE = 0.5;

const clamp = (x: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, x));

/**
 * Frequencies proportional to the weights, clamped to [min, max], spending the budget exactly;
 * when even the minimum does not fit, the floor falls (OVERSUBSCRIBED_FLOOR_SHARE).
 */
export function allocateFrequencies(input: AllocationInput): Allocation {
  const { weights, costs, budgetPerHour, maxFrequency } = input;
  const n = weights.length;
  if (n === 0) return { scale: 0, minFrequency: input.minFrequency, frequencies: [] };
  const cost = (i: number): number => costs[i] ?? 1;
  const totalCost = weights.reduce((sum, _, i) => sum + cost(i), 0);
  if (!Number.isFinite(budgetPerHour) || totalCost * maxFrequency <= budgetPerHour) {
    return {
      scale: Number.POSITIVE_INFINITY,
      minFrequency: input.minFrequency,
      frequencies: weights.map(() => maxFrequency),
    };
  }
  const minFrequency =
    totalCost * input.minFrequency >= (input.floorBudgetPerHour ?? budgetPerHour)
      ? (OVERSUBSCRIBED_FLOOR_SHARE * budgetPerHour) / totalCost
      : input.minFrequency;
  const frequency = (w: number, scale: number): number =>
    plannedFrequency(w, scale, minFrequency, maxFrequency, input.tailBound);
  const spend = (scale: number): number => weights.reduce((sum, w, i) => sum + cost(i) * frequency(w, scale), 0);
  // spend() is monotone in scale: bisect in log space between a scale that underspends and one that overspends.
  let lo = 1e-9;
  let hi = 1;
  while (spend(hi) < budgetPerHour && hi < 1e12) hi *= 4;
  for (let i = 0; i < 60; i++) {
    const mid = Math.sqrt(lo * hi);
    if (spend(mid) < budgetPerHour) lo = mid;
    else hi = mid;
  }
  return { scale: lo, minFrequency, frequencies: weights.map((w) => frequency(w, lo)) };
}

export interface DelayEstimate {
  /** Event-weighted mean detection delay, hours. */
  meanHours: number;
  /** Event-weighted 95th percentile, hours. */
  p95Hours: number;
}

/**
 * Expected detection delay when log i (changing at rate λi, Poisson) is polled regularly every
 * 1/fi hours: a change waits uniformly in [0, 1/fi], so the mean is Σ λi/(2 fi) / Σ λi and the
 * tail is P(D > d) = Σ λi · max(0, 1 − d·fi) / Σ λi.
 */
export function expectedDelay(rates: readonly number[], frequencies: readonly number[]): DelayEstimate {
  const total = rates.reduce((a, b) => a + b, 0);
  if (total <= 0) return { meanHours: 0, p95Hours: 0 };
  const period = (i: number): number => 1 / Math.max(1e-12, frequencies[i] ?? 0);
  const meanHours = rates.reduce((sum, r, i) => sum + (r * period(i)) / 2, 0) / total;
  let lo = 0;
  let hi = Math.max(...rates.map((_, i) => period(i)));
  for (let i = 0; i < 60; i++) {
    const mid = (lo + hi) / 2;
    if (shareWaitingLonger(rates, frequencies, mid) > 0.05) lo = mid;
    else hi = mid;
  }
  return { meanHours, p95Hours: hi };
}

/** The expected share of changes that wait longer than `hours` (regular polls, Poisson changes). */
export function shareWaitingLonger(rates: readonly number[], frequencies: readonly number[], hours: number): number {
  let total = 0;
  let longer = 0;
  rates.forEach((r, i) => {
    total += r;
    longer += r * Math.max(0, 1 - hours * Math.max(1e-12, frequencies[i] ?? 0));
  });
  return total > 0 ? longer / total : 0;
}

/** The square-root optimum's mean delay for a budget B (polls per hour): (Σ√λ)² / (2·B·Σλ). */
export function squareRootOptimumMeanHours(rates: readonly number[], budgetPerHour: number): number {
  const sumSqrt = rates.reduce((a, r) => a + Math.sqrt(r), 0);
  const sum = rates.reduce((a, r) => a + r, 0);
  return sum <= 0 ? 0 : (sumSqrt * sumSqrt) / (2 * budgetPerHour * sum);
}

/** A log never polled yet, as the spreading of first polls sees it. */
export interface FirstPoll {
  /** When it must have been polled at the latest (`watch.schedule.firstPollWithinSeconds`). */
  deadline: number;
  /** Requests its poll is expected to cost. */
  cost: number;
}

/**
 * The latest moment each never-polled log's first poll may start so that, at one request per
 * `slotMs`, every one of them has been polled by its deadline: earliest deadline first, each as
 * late as the ones after it allow (of a thousand logs due together the last starts one slot
 * before the deadline, the first a thousand slots before it). A start in the past means the
 * budget cannot meet every deadline; those logs then go in deadline order as fast as the budget
 * allows. `slotMs` 0 (no budget): each start is its deadline.
 */
export function latestFirstPollStarts(firstPolls: readonly FirstPoll[], slotMs: number): number[] {
  const order = firstPolls.map((_, i) => i).sort((a, b) => firstPolls[a]!.deadline - firstPolls[b]!.deadline);
  const starts = new Array<number>(firstPolls.length);
  let nextStart = Number.POSITIVE_INFINITY;
  for (let j = order.length - 1; j >= 0; j--) {
    const i = order[j]!;
    const { deadline, cost } = firstPolls[i]!;
    starts[i] = Math.min(deadline, nextStart) - Math.max(1, cost) * slotMs;
    nextStart = starts[i];
  }
  return starts;
}

/**
 * A log's weight in the allocation: its change rate per request a poll costs, to the power alpha
 * (floored so a log that never changed still gets its minimum share, not a zero weight).
 */
export function allocationWeight(ratePerHour: number, cost: number, alpha: number): number {
  return Math.pow(Math.max(1e-9, ratePerHour / cost), alpha);
}

/** The exponents `chooseAlpha` tries below 0.5 when no pull of the quiet logs is affordable, down to round-robin. */
const ALPHA_CANDIDATES = [0.475, 0.45, 0.425, 0.4, 0.375, 0.35, 0.325, 0.3, 0.25, 0.2, 0.1, 0];

export interface AlphaChoice {
  alpha: number;
  /** Set when the square-root law keeps the expected p95 by pulling the quiet logs (alpha is then 0.5). */
  tailBound?: TailBound | undefined;
  expected: DelayEstimate;
  /** What round-robin would give with the same rates and its own budget. */
  roundRobin: DelayEstimate;
}

type ChoiceInput = Omit<AllocationInput, 'weights' | 'tailBound'> & { roundRobinBudgetPerHour?: number };

/**
 * The best expected mean whose expected p95 delay is no worse than round-robin's, for the rates
 * as estimated now: the most this budget buys without making the slowest changes wait longer
 * than polling every log in turn would. The square-root law (alpha 0.5) when its tail is within
 * round-robin's; otherwise the square-root law with the quiet logs pulled toward round-robin's
 * p95 (`TailBound`), the optimum of that constrained problem; when even that cannot be afforded
 * (rates so even that every log needs round-robin's share), the largest exponent below 0.5 whose
 * tail is within it.
 *
 * Round-robin is judged with `roundRobinBudgetPerHour`: the budget it would have, which is more
 * than the adaptive allocation divides when follow-up polls take their share. Comparing with a
 * round-robin starved of the same follow-ups would promise a p95 the real one beats.
 */
export function chooseAlpha(rates: readonly number[], input: ChoiceInput): AlphaChoice {
  const delayFor = (alpha: number, budgetPerHour = input.budgetPerHour): DelayEstimate => {
    const weights = rates.map((r, i) => allocationWeight(r, input.costs[i] ?? 1, alpha));
    const { frequencies } = allocateFrequencies({ ...input, budgetPerHour, weights });
    return expectedDelay(rates, frequencies);
  };
  const roundRobin = delayFor(0, input.roundRobinBudgetPerHour);
  const squareRoot = delayFor(0.5);
  if (squareRoot.p95Hours <= roundRobin.p95Hours) return { alpha: 0.5, expected: squareRoot, roundRobin };
  const pulled = pullTowardTailBound(rates, input, roundRobin.p95Hours);
  if (pulled) return { alpha: 0.5, ...pulled, roundRobin };
  for (const alpha of ALPHA_CANDIDATES) {
    const expected = delayFor(alpha);
    if (expected.p95Hours <= roundRobin.p95Hours) return { alpha, expected, roundRobin };
  }
  return { alpha: 0, expected: delayFor(0), roundRobin };
}

/**
 * The weakest pull (`TailBound`) under which the square-root law's expected p95 is at most
 * `boundHours` within the budget, or undefined when no pull can be afforded: the tail falls as
 * the pull grows, so the least pull that meets the bound is found by bisection, and it spends on
 * the tail no more of the busy logs' polls than the bound needs.
 */
function pullTowardTailBound(
  rates: readonly number[],
  input: ChoiceInput,
  boundHours: number,
): { tailBound: TailBound; expected: DelayEstimate } | undefined {
  const weights = rates.map((r, i) => allocationWeight(r, input.costs[i] ?? 1, 0.5));
  const boundFrequency = 1 / boundHours;
  if (!(boundFrequency > 0 && boundFrequency < input.maxFrequency) || weights.length === 0) return undefined;
  const at = (pull: number) => {
    const tailBound = { boundFrequency, pull };
    const { frequencies } = allocateFrequencies({ ...input, weights, tailBound });
    return { tailBound, frequencies, met: shareWaitingLonger(rates, frequencies, boundHours) <= 0.05 };
  };
  // At this pull every log below the bound is brought up to it: the most any pull can do.
  const strongest = 1 / Math.min(...weights.map((w) => w * w));
  let hi = at(strongest);
  if (!hi.met) return undefined;
  // Bisection in log space, to a relative step of a few parts in a thousand.
  let lo = strongest * 1e-6;
  for (let i = 0; i < 12; i++) {
    const mid = Math.sqrt(lo * hi.tailBound.pull);
    const tried = at(mid);
    if (tried.met) hi = tried;
    else lo = mid;
  }
  const spent = hi.frequencies.reduce((sum, f, i) => sum + f * (input.costs[i] ?? 1), 0);
  if (spent > input.budgetPerHour * 1.000001) return undefined;
  return { tailBound: hi.tailBound, expected: expectedDelay(rates, hi.frequencies) };
}

/**
 * The shape of a schedule's allocation: alpha 0 for round-robin (every weight 1), the configured
 * number, or the choice of `auto` for these rates (asked for only then: they take a sum over a
 * grid per log), with the pull of its quiet logs when it has one.
 */
export function allocationShapeFor(
  schedule: Pick<ScheduleConfig, 'policy' | 'alpha'>,
  rates: () => readonly number[],
  input: Parameters<typeof chooseAlpha>[1],
): { alpha: number; tailBound?: TailBound | undefined } {
  if (schedule.policy === 'round-robin') return { alpha: 0 };
  if (schedule.alpha !== 'auto') return { alpha: schedule.alpha };
  const { alpha, tailBound } = chooseAlpha(rates(), input);
  return { alpha, tailBound };
}
