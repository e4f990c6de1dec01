import type { ScheduleConfig } from './scheduleConfig.js';
import type { LogHistory, RateState } from './rateState.js';
import { posteriorSessionRate, type RatePrior } from './sessionPrior.js';

const HOUR_MS = 3_600_000;
const LN2 = Math.log(2);

export type EstimatorConfig = Pick<ScheduleConfig, 'rateHalfLifeHours' | 'sessionGapSeconds'>;

/**
 * Online change-rate estimate of one log, from what each poll returns (every change since the
 * previous poll, so counts over observed time are exact). Changes come in edit sessions, so it
 * counts sessions and changes per session apart: rate = changes per session × the posterior mean
 * of the session rate (sessionPrior.ts; docs/scheduling.md). Counts and hours decay with
 * `rateHalfLifeHours` so the estimate follows slow drift.
 */
export class RateEstimator {
  private readonly decayPerMs: number;
  private readonly gapMs: number;

  constructor(config: EstimatorConfig) {
    this.decayPerMs = LN2 / (config.rateHalfLifeHours * HOUR_MS);
    this.gapMs = config.sessionGapSeconds * 1000;
  }

  /**
   * Records one successful poll at `now` that returned changes performed at `performedAt`.
   * `serviceNow` is the service's clock at that poll (its dates are on that clock; `now` when
   * unknown). The first poll of a log only starts the observation: what it returns may be a backfill.
   */
  observe(state: RateState, now: number, performedAt: readonly number[], serviceNow = now): RateState {
    // The service's dates are believed up to its own clock at the poll (the newest recorded, up to
    // its poll's): an entry dated years ahead (a skill's version log is read whole, not by a window
    // of dates) stood as the newest change for ever, after which no change began a session and the
    // log's rate, and its polls, only fell. Its clock, not ours: with the service minutes ahead, our
    // clock dated each change of a session at the poll that saw it, splitting the session at every
    // poll and putting it further back than sessionFollowUps looks for one still going on.
    const ceiling = Number.isFinite(serviceNow) ? serviceNow : now;
    const ahead = ceiling - now;
    const dated = performedAt.map((t) => Math.min(t, ceiling));
    const last = state.lastEventAt === null ? null : Math.min(state.lastEventAt, (state.updatedAt ?? now) + ahead);
    const newest = dated.reduce((a, b) => Math.max(a, b), last ?? Number.NEGATIVE_INFINITY);
    const lastEventAt = Number.isFinite(newest) ? newest : null;
    if (state.updatedAt === null) return { ...state, lastEventAt, updatedAt: now };
    const dt = Math.max(0, now - state.updatedAt);
    const keep = Math.exp(-this.decayPerMs * dt);
    // Exposure accrued over dt, itself decayed: the integral of exp(-decay * age) over the gap.
    const exposureHours = (1 - keep) / this.decayPerMs / HOUR_MS;
    // Changes older than an hour before the previous poll are late arrivals or a backfill.
    const fresh = dated.filter((t) => t >= state.updatedAt! - HOUR_MS).sort((a, b) => a - b);
    let sessions = 0;
    let previous = last ?? Number.NEGATIVE_INFINITY;
    for (const t of fresh) {
      if (t - previous > this.gapMs) sessions++;
      previous = Math.max(previous, t);
    }
    return {
      events: state.events * keep + fresh.length,
      sessions: state.sessions * keep + sessions,
      hours: state.hours * keep + exposureHours,
      lastEventAt,
      updatedAt: now,
    };
  }

  /**
   * Starts a log's record at its first poll (at `now`) from the history that poll read: the
   * changes performed in [fromMs, toMs] (the service's clock), each weighted by its age as if it
   * had been seen live, over the equally decayed hours of that span.
   */
  observeHistory(now: number, history: LogHistory): RateState {
    // Believed up to the end of the span read, as observe believes them up to now.
    const times = history.performedAt.map((t) => Math.min(t, history.toMs)).sort((a, b) => a - b);
    const weight = (t: number): number => Math.exp(-this.decayPerMs * Math.max(0, history.toMs - t));
    let events = 0;
    let sessions = 0;
    let previous = Number.NEGATIVE_INFINITY;
    for (const t of times) {
      events += weight(t);
      if (t - previous > this.gapMs) sessions += weight(t);
      previous = t;
    }
    const hours = (1 - weight(history.fromMs)) / this.decayPerMs / HOUR_MS;
    return { events, sessions, hours, lastEventAt: times.at(-1) ?? null, updatedAt: now };
  }

  /** Changes an edit session of this log brings, shrunk toward the prior's by one session's worth. */
  changesPerSession(state: RateState, prior: RatePrior): number {
    return (state.events + prior.changesPerSession) / (state.sessions + 1);
  }

  /** Long-run changes per hour under `prior`. */
  rate(state: RateState, prior: RatePrior): number {
    return this.changesPerSession(state, prior) * posteriorSessionRate(prior, state.sessions, state.hours);
  }
}
