import { logKey, type LogKind } from '../logs.js';
import type { RateEstimateRow, WatchedLog } from '../store/storeRecords.js';
import { firstPollSlotHolds, firstPollSlotMs } from './firstPollSlot.js';
import {
  allocateFrequencies,
  allocationWeight,
  alphaFor,
  firstInFirstPollOrder,
  latestFirstPollStarts,
} from './pollAllocation.js';
import { LogNumbers } from './logNumbers.js';
import { RateEstimator } from './rateEstimator.js';
import { emptyRateState, type LogHistory, type RateState } from './rateState.js';
import type { LogCandidate } from './nextAction.js';
import type { ScheduleConfig } from './scheduleConfig.js';
import { noFollowUp, SessionFollowUps, type FollowUpState } from './sessionFollowUps.js';
import { configuredPrior, priorsByKind, type RatePrior } from './sessionPrior.js';

const HOUR_MS = 3_600_000;
/** How often the budget is re-divided among the logs. */
const REALLOCATE_MS = 60_000;
/** How often the priors are refitted to the watched logs (the population changes slowly). */
const REFIT_MS = 10 * 60_000;

export interface PollSchedulerDeps {
  config: ScheduleConfig;
  /** watch.pollIntervalSeconds in ms: no log is polled more often. */
  minIntervalMs: number;
  /** The read budget's pace: milliseconds between two requests (follows the server's headers). */
  budget?: { intervalMs(now: number): number } | undefined;
  /** Requests per hour discovery is expected to spend, left out of what polls may use. */
  discoveryPerHour?: () => number;
  /** Benchmark only: plan with these rates (per hour) instead of learned ones, without follow-ups. */
  knownRates?: (key: string) => number | undefined;
  /** The service's clock, against which performedAt is compared (defaults to the local one). */
  serviceNow?: () => number;
}

/** The slot the kept first-poll starts were reckoned at, and the requests of the first polls they chain. */
interface FirstPollReckoning {
  slotMs: number;
  chainCost: number;
}

/**
 * A scheduled log. Its numbers (last poll, cost, rate state, and the planned rate and weight,
 * rate^alpha, kept until the estimate, prior or alpha change: every decision reads them) are in
 * the scheduler's `LogNumbers` at `slot`.
 */
interface Scheduled {
  watched: WatchedLog;
  readonly slot: number;
  followUp: FollowUpState;
}

/**
 * Decides which log to poll next (docs/scheduling.md). Each log gets a target frequency
 * proportional to its change rate to the power alpha (cost-aware, clamped between 1/maxInterval
 * and 1/pollInterval), scaled so the polls spend the budget left after discovery; the most urgent
 * log (time since its last poll × its frequency) goes first, as in stride scheduling.
 */
export class PollScheduler {
  private readonly estimator: RateEstimator;
  private readonly logs = new Map<string, Scheduled>();
  private readonly numbers = new LogNumbers();
  /** Rates learned before a restart (`restore`); none on a first start. */
  private persisted: Map<string, { rate: RateState; cost: number }> | undefined;
  private scale = 0;
  /** Polls per hour every log gets at least: 1/maxInterval, or less when the budget cannot cover that. */
  private floor = Number.POSITIVE_INFINITY;
  private allocatedAt = Number.NEGATIVE_INFINITY;
  private priors: (kind: LogKind) => RatePrior;
  private fittedAt = Number.NEGATIVE_INFINITY;
  /** The exponent in use: the configured one, or the last choice of `auto`. */
  private alpha: number;
  private readonly followUps: SessionFollowUps;
  /**
   * The last list `candidates` returned, kept until a poll, the set of logs or a reallocation
   * changes it, and while some log was never polled, only while the slot its first-poll starts were
   * reckoned at (`firstPolls`) holds at the pace of now. Every decision asks; rebuilding each time
   * would be most of the scheduler's CPU.
   */
  private kept: { list: readonly LogCandidate[]; firstPolls: FirstPollReckoning | undefined } | undefined;

  constructor(private readonly deps: PollSchedulerDeps) {
    this.estimator = new RateEstimator(deps.config);
    this.followUps = new SessionFollowUps(deps.config, deps.minIntervalMs);
    const prior = configuredPrior(deps.config);
    this.priors = () => prior;
    this.alpha = deps.config.policy === 'round-robin' ? 0 : deps.config.alpha === 'auto' ? 0.5 : deps.config.alpha;
  }

  /** Rates learned before a restart, as recordPoll returned them; call before the first `sync`. */
  restore(saved: readonly RateEstimateRow[]): void {
    for (const { events, sessions, hours, lastEventAt, updatedAt, pollCost, ...row } of saved)
      (this.persisted ??= new Map()).set(logKey(row), {
        rate: { events, sessions, hours, lastEventAt, updatedAt },
        cost: pollCost,
      });
  }

  /** Brings the scheduled set in line with the active watched logs. */
  sync(active: readonly WatchedLog[]): void {
    const keys = new Set<string>();
    for (const w of active) keys.add(logKey(w));
    // Logs that left go first, so the logs this sync adds take their slots: a log replaced by
    // another (discovery, a rename) would otherwise double the tenant's number array.
    for (const [key, s] of this.logs) {
      if (!keys.has(key)) {
        this.logs.delete(key);
        this.numbers.remove(s.slot);
        this.allocatedAt = Number.NEGATIVE_INFINITY;
        this.kept = undefined;
      }
    }
    this.numbers.reserve(active.length);
    for (const w of active) {
      const key = logKey(w);
      const known = this.logs.get(key);
      if (known) {
        if (known.watched.firstPollBy !== w.firstPollBy || known.watched.createdAt !== w.createdAt)
          this.kept = undefined;
        known.watched = w;
        continue;
      }
      const saved = this.persisted?.get(key);
      this.logs.set(key, {
        watched: w,
        slot: this.numbers.add(saved?.rate ?? emptyRateState(), w.lastPollAt, saved?.cost ?? 1),
        followUp: noFollowUp(),
      });
      this.allocatedAt = Number.NEGATIVE_INFINITY;
      this.kept = undefined;
    }
  }

  /** Every scheduled log as the decision sees it: its target interval, anchor and follow-up. */
  candidates(now: number): readonly LogCandidate[] {
    this.reallocate(now);
    const kept = this.kept;
    if (kept !== undefined && (kept.firstPolls === undefined || this.firstPollsHold(kept.firstPolls, now)))
      return kept.list;
    // The floor in force (longer than maxIntervalMinutes when oversubscribed). Starving: late enough that a log at
    // the floor is not polled early, early enough that the slots before the deadline serve every log reaching it.
    const maxIntervalMs = Math.max(this.deps.config.maxIntervalMinutes * 60_000, HOUR_MS / this.floor);
    const starvingMs = Math.max(0.9 * maxIntervalMs, maxIntervalMs - 120_000);
    const max = this.bounds().max;
    const { starts: firstPollAt, reckoning } = this.firstPollStarts(now);
    const list = [...this.logs.entries()].map(([key, s]) =>
      this.candidate(key, s, max, starvingMs, firstPollAt.get(s) ?? null),
    );
    this.kept = { list, firstPolls: reckoning };
    return list;
  }

  private candidate(
    key: string,
    s: Scheduled,
    max: number,
    starvingMs: number,
    firstPollAt: number | null,
  ): LogCandidate {
    const intervalMs = this.intervalMs(s, max);
    const lastPollAt = this.numbers.lastPollAt(s.slot);
    return {
      key,
      earliestAt: lastPollAt === null ? Number.NEGATIVE_INFINITY : lastPollAt + this.deps.minIntervalMs,
      anchorAt: lastPollAt ?? this.firstPollBy(s) - intervalMs,
      intervalMs,
      starvingMs,
      followUpDueAt: s.followUp.dueAt,
      firstPollAt,
    };
  }

  /**
   * After a poll of `s`: unless it was a first poll that others' starts depend on, the poll changed
   * its own candidate alone (floor and scale move only at a reallocation), so a copy of the list
   * gets that one anew (a decision may still hold the old list). A first poll other than the
   * chain's first moves the starts before it: the list is built again at the next ask.
   */
  private polled(key: string, s: Scheduled): void {
    const kept = this.kept;
    const i = kept !== undefined ? kept.list.findIndex((c) => c.key === key) : -1;
    const old = kept?.list[i];
    if (old === undefined || (old.firstPollAt !== null && !this.firstInChain(s))) {
      this.kept = undefined;
      return;
    }
    const list = kept!.list.slice();
    list[i] = this.candidate(key, s, this.bounds().max, old.starvingMs, null);
    // The kept chain cost counts `s` still: a stricter hold than the chain left needs.
    const firstPolls = list.some((c) => c.firstPollAt !== null) ? kept!.firstPolls : undefined;
    this.kept = { list, firstPolls };
  }

  /** Whether `s`, just polled for the first time, came first in the chain of first polls. */
  private firstInChain(s: Scheduled): boolean {
    const chain = [...this.logs.values()].filter((x) => x === s || this.numbers.lastPollAt(x.slot) === null);
    return firstInFirstPollOrder(
      chain.map((x) => ({ deadline: this.firstPollBy(x), cost: this.numbers.cost(x.slot) })),
      chain.indexOf(s),
    );
  }

  /**
   * The deadline of a log's first poll: the one the store kept since it was first watched, or
   * sooner if `firstPollWithinSeconds` has been lowered since.
   */
  private firstPollBy(s: Scheduled): number {
    const w = s.watched;
    return Math.min(w.firstPollBy, w.createdAt + this.deps.config.firstPollWithinSeconds * 1000);
  }

  /**
   * The latest start of each never-polled log's first poll, reckoned at a slot a little longer
   * than the pace the polls may spend now (`firstPollSlotMs`; `reckoning` undefined when every
   * log was polled).
   */
  private firstPollStarts(now: number): { starts: Map<Scheduled, number>; reckoning: FirstPollReckoning | undefined } {
    const never = [...this.logs.values()].filter((s) => this.numbers.lastPollAt(s.slot) === null);
    if (never.length === 0) return { starts: new Map(), reckoning: undefined };
    const chainCost = never.reduce((sum, s) => sum + Math.max(1, this.numbers.cost(s.slot)), 0);
    const slotMs = firstPollSlotMs(this.pollSlotMs(now), chainCost);
    const starts = latestFirstPollStarts(
      never.map((s) => ({ deadline: this.firstPollBy(s), cost: this.numbers.cost(s.slot) })),
      slotMs,
    );
    return { starts: new Map(never.map((s, i) => [s, starts[i]!])), reckoning: { slotMs, chainCost } };
  }

  private firstPollsHold(reckoning: FirstPollReckoning, now: number): boolean {
    return firstPollSlotHolds(reckoning.slotMs, this.pollSlotMs(now), reckoning.chainCost);
  }

  /** Milliseconds per request the polls may spend now (0: no budget). */
  private pollSlotMs(now: number): number {
    const perHour = this.pollBudgetPerHour(now);
    return Number.isFinite(perHour) ? HOUR_MS / perHour : 0;
  }

  /** The scheduled log with this key (the decision names logs by key). */
  watchedLog(key: string): WatchedLog | undefined {
    return this.logs.get(key)?.watched;
  }

  /**
   * Records a poll: a successful one updates the rate estimate and the cost of a poll, and the
   * log as the poll's commits left it (`watched`) replaces the scheduled copy, so the next poll
   * starts from its cursor. Returns what to persist so a restart keeps what was learned
   * (undefined: nothing changed).
   */
  recordPoll(
    w: WatchedLog,
    now: number,
    result?: { requests: number; emittedPerformedAt: readonly number[]; history?: LogHistory; watched?: WatchedLog },
  ): RateEstimateRow | undefined {
    const s = this.logs.get(logKey(w));
    if (!s || !result) return undefined;
    if (result.watched) s.watched = result.watched;
    const numbers = this.numbers;
    numbers.setLastPollAt(s.slot, now);
    const previousNewest = numbers.lastEventAt(s.slot);
    const serviceNow = this.deps.serviceNow?.() ?? now;
    const rate =
      result.history && numbers.updatedAt(s.slot) === null
        ? this.estimator.observeHistory(now, result.history)
        : this.estimator.observe(numbers.rate(s.slot), now, result.emittedPerformedAt, serviceNow);
    numbers.setRate(s.slot, rate);
    numbers.clearPlan(s.slot);
    // Follow-ups belong to the adaptive policy; the benchmark's optimum plans with known rates alone.
    const adaptive = this.deps.config.policy === 'adaptive' && this.deps.knownRates === undefined;
    const inSession =
      adaptive &&
      this.followUps.inProgress({
        previousNewest,
        newest: rate.lastEventAt,
        serviceNow,
        changesPerSession: this.estimator.changesPerSession(rate, this.priors(s.watched.log)),
        ratePerHour: this.rateOf(s),
      });
    s.followUp = this.followUps.afterPoll(s.followUp, now, inSession);
    // A first poll that read history costs a page more than the polls the cost is meant for.
    if (result.requests > 0 && !result.history)
      numbers.setCost(s.slot, 0.9 * numbers.cost(s.slot) + 0.1 * result.requests);
    this.polled(logKey(w), s);
    return {
      log: w.log,
      objectId: w.objectId,
      ...rate,
      pollCost: numbers.cost(s.slot),
      plannedRate: this.rateOf(s),
      nextPollAt: s.followUp.dueAt ?? now + this.intervalMs(s),
    };
  }

  /** What the scheduler has decided, for metrics: the exponent in use, and where the budget goes. */
  snapshot(now: number) {
    return {
      alpha: this.alpha,
      pollBudgetPerHour: this.pollBudgetPerHour(now),
      followUpsLastHour: this.followUps.lastHour(now),
    };
  }

  pollBudgetPerHour(now: number): number {
    const budget = this.deps.budget;
    if (!budget) return Number.POSITIVE_INFINITY;
    const pace = HOUR_MS / Math.max(1e-9, budget.intervalMs(now));
    return Math.max(1, pace - (this.deps.discoveryPerHour?.() ?? 0) - this.followUps.lastHour(now));
  }

  private rateOf(s: Scheduled): number {
    const planned = this.numbers.plannedRate(s.slot);
    if (planned !== undefined) return planned;
    const rate =
      this.deps.knownRates?.(logKey(s.watched)) ??
      this.estimator.rate(this.numbers.rate(s.slot), this.priors(s.watched.log));
    this.numbers.setPlannedRate(s.slot, rate);
    return rate;
  }

  private weightOf(s: Scheduled): number {
    const planned = this.numbers.plannedWeight(s.slot);
    if (planned !== undefined) return planned;
    const weight = this.alpha === 0 ? 1 : allocationWeight(this.rateOf(s), this.numbers.cost(s.slot), this.alpha);
    this.numbers.setPlannedWeight(s.slot, weight);
    return weight;
  }

  private bounds(): { min: number; max: number } {
    const max = this.deps.minIntervalMs > 0 ? HOUR_MS / this.deps.minIntervalMs : Number.POSITIVE_INFINITY;
    return { min: Math.min(max, 60 / this.deps.config.maxIntervalMinutes), max };
  }

  /** Milliseconds between polls of `s` at its current target frequency. */
  private intervalMs(s: Scheduled, max = this.bounds().max): number {
    const frequency =
      this.scale === Number.POSITIVE_INFINITY
        ? max
        : Math.min(max, Math.max(this.floor, this.scale * this.weightOf(s)));
    return Number.isFinite(frequency) ? HOUR_MS / frequency : 0;
  }

  private reallocate(now: number): void {
    if (now - this.allocatedAt < REALLOCATE_MS) return;
    this.allocatedAt = now;
    this.kept = undefined;
    const list = [...this.logs.values()];
    const { min, max } = this.bounds();
    const budgetPerHour = this.pollBudgetPerHour(now);
    // Round-robin has no follow-ups: it divides their share too; and they yield to the floor.
    const roundRobinBudgetPerHour = budgetPerHour + this.followUps.lastHour(now);
    if (now - this.fittedAt >= REFIT_MS) {
      this.fittedAt = now;
      this.priors = priorsByKind(
        list.map((s) => ({ log: s.watched.log, state: this.numbers.rate(s.slot) })),
        this.deps.config,
        this.priors,
      );
      for (const s of list) this.numbers.clearPlan(s.slot);
      const input = {
        costs: list.map((s) => this.numbers.cost(s.slot)),
        budgetPerHour,
        roundRobinBudgetPerHour,
        minFrequency: min,
        maxFrequency: max,
      };
      this.alpha = alphaFor(this.deps.config, () => list.map((s) => this.rateOf(s)), input);
    }
    const allocation = allocateFrequencies({
      weights: list.map((s) => this.weightOf(s)),
      costs: list.map((s) => this.numbers.cost(s.slot)),
      budgetPerHour,
      floorBudgetPerHour: roundRobinBudgetPerHour,
      minFrequency: min,
      maxFrequency: max,
    });
    this.scale = allocation.scale;
    this.floor = allocation.minFrequency;
  }
}

export type ScheduleSnapshot = ReturnType<PollScheduler['snapshot']>;
