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
}

export interface Allocation {
  /** Polls per hour = clamp(scale * weight, minFrequency, max). */
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
  const spend = (scale: number): number =>
    weights.reduce((sum, w, i) => sum + cost(i) * clamp(scale * w, minFrequency, maxFrequency), 0);
  // spend() is monotone in scale: bisect in log space between a scale that underspends and one that overspends.
  let lo = 1e-9;
  let hi = 1;
  while (spend(hi) < budgetPerHour && hi < 1e12) hi *= 4;
  for (let i = 0; i < 60; i++) {
    const mid = Math.sqrt(lo * hi);
    if (spend(mid) < budgetPerHour) lo = mid;
    else hi = mid;
  }
  return { scale: lo, minFrequency, frequencies: weights.map((w) => clamp(lo * w, minFrequency, maxFrequency)) };
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
  const tail = (d: number): number => rates.reduce((sum, r, i) => sum + r * Math.max(0, 1 - d / period(i)), 0) / total;
  let lo = 0;
  let hi = Math.max(...rates.map((_, i) => period(i)));
  for (let i = 0; i < 60; i++) {
    const mid = (lo + hi) / 2;
    if (tail(mid) > 0.05) lo = mid;
    else hi = mid;
  }
  return { meanHours, p95Hours: hi };
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
 * Whether `firstPolls[i]` comes first in `latestFirstPollStarts`' order (earliest deadline, ties
 * in the order given): each start depends only on the logs after it, so once that one is polled
 * the others' starts are what they were.
 */
export function firstInFirstPollOrder(firstPolls: readonly FirstPoll[], i: number): boolean {
  const deadline = firstPolls[i]!.deadline;
  return firstPolls.every((p, j) => p.deadline > deadline || (p.deadline === deadline && j >= i));
}

/**
 * A log's weight in the allocation: its change rate per request a poll costs, to the power alpha
 * (floored so a log that never changed still gets its minimum share, not a zero weight).
 */
export function allocationWeight(ratePerHour: number, cost: number, alpha: number): number {
  return Math.pow(Math.max(1e-9, ratePerHour / cost), alpha);
}

/** The exponents `chooseAlpha` tries: from close to round-robin up to the mean-optimal 0.5. */
const ALPHA_CANDIDATES = [0.5, 0.475, 0.45, 0.425, 0.4, 0.375, 0.35, 0.325, 0.3, 0.25, 0.2, 0.1, 0];

export interface AlphaChoice {
  alpha: number;
  expected: DelayEstimate;
  /** What round-robin would give with the same rates and its own budget. */
  roundRobin: DelayEstimate;
}

/**
 * The largest exponent whose expected p95 delay is no worse than round-robin's, for the rates
 * as estimated now: the best mean this budget buys without making the slowest changes wait
 * longer than polling every log in turn would. With skewed rates that is 0.5 or close (busy
 * logs take what quiet ones do not need); with even rates the tail decides and it is lower.
 * Round-robin is judged with `roundRobinBudgetPerHour`, the budget it would have: it sends no
 * follow-ups, so it also divides their share.
 */
export function chooseAlpha(
  rates: readonly number[],
  input: Omit<AllocationInput, 'weights'> & { roundRobinBudgetPerHour?: number },
): AlphaChoice {
  const delayFor = (alpha: number, budgetPerHour = input.budgetPerHour): DelayEstimate => {
    const weights = rates.map((r, i) => allocationWeight(r, input.costs[i] ?? 1, alpha));
    const { frequencies } = allocateFrequencies({ ...input, budgetPerHour, weights });
    return expectedDelay(rates, frequencies);
  };
  const roundRobin = delayFor(0, input.roundRobinBudgetPerHour);
  for (const alpha of ALPHA_CANDIDATES) {
    const expected = delayFor(alpha);
    if (expected.p95Hours <= roundRobin.p95Hours) return { alpha, expected, roundRobin };
  }
  return { alpha: 0, expected: delayFor(0), roundRobin };
}

/**
 * The exponent a schedule uses: 0 for round-robin (every weight 1), the configured number, or the
 * choice of `auto` for these rates (asked for only then: they take a sum over a grid per log).
 */
export function alphaFor(
  schedule: Pick<ScheduleConfig, 'policy' | 'alpha'>,
  rates: () => readonly number[],
  input: Parameters<typeof chooseAlpha>[1],
): number {
  if (schedule.policy === 'round-robin') return 0;
  return schedule.alpha === 'auto' ? chooseAlpha(rates(), input).alpha : schedule.alpha;
}
