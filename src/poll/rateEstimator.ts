import type { ScheduleConfig } from './scheduleConfig.js';

const HOUR_MS = 3_600_000;
const LN2 = Math.log(2);

/** What is kept per log (and persisted, so a restart keeps what was learned). */
export interface RateState {
  /** Decayed count of changes seen. */
  events: number;
  /** Decayed hours of observation behind `events`. */
  hours: number;
  /** Burst term in changes per hour, as of `updatedAt`. */
  burst: number;
  /** Clock ms of the last update; null before the first poll. */
  updatedAt: number | null;
}

export const emptyRateState = (): RateState => ({ events: 0, hours: 0, burst: 0, updatedAt: null });

/**
 * Online change-rate estimate of one log, from what each poll returns. A poll of an append-only
 * log returns every change since the previous one, so counts over observed time are exact.
 *
 * Long-run rate: a Gamma-Poisson posterior, (priorEvents + n) / (priorHours + t), with n and t
 * decayed by `rateHalfLifeHours` so the estimate follows slow drift. Burst term: each change just
 * seen adds a rate that decays with `burstHalfLifeMinutes` and integrates to `burstFollowUps`
 * further changes, because an administrator editing an object makes many changes in minutes.
 */
export class RateEstimator {
  private readonly longDecayPerMs: number;
  private readonly burstDecayPerMs: number;
  /** Rate (per hour) added by one change seen at age 0: integrates to burstFollowUps changes. */
  private readonly burstGain: number;

  constructor(private readonly config: Pick<ScheduleConfig, 'priorEvents' | 'priorHours' | 'rateHalfLifeHours' | 'burstHalfLifeMinutes' | 'burstFollowUps'>) {
    this.longDecayPerMs = LN2 / (config.rateHalfLifeHours * HOUR_MS);
    this.burstDecayPerMs = LN2 / (config.burstHalfLifeMinutes * 60_000);
    this.burstGain = (config.burstFollowUps * LN2) / (config.burstHalfLifeMinutes / 60);
  }

  /**
   * Records one successful poll at `now` that returned changes performed at `performedAt`.
   * The first poll of a log only starts the observation: what it returns may be a backfill.
   */
  observe(state: RateState, now: number, performedAt: readonly number[]): RateState {
    if (state.updatedAt === null) return { ...state, updatedAt: now };
    const dt = Math.max(0, now - state.updatedAt);
    const keep = Math.exp(-this.longDecayPerMs * dt);
    // Exposure accrued over dt, itself decayed: the integral of exp(-decay * age) over the gap.
    const exposureHours = this.longDecayPerMs > 0 ? (1 - keep) / this.longDecayPerMs / HOUR_MS : dt / HOUR_MS;
    let burst = state.burst * Math.exp(-this.burstDecayPerMs * dt);
    let fresh = 0;
    for (const t of performedAt) {
      // Changes older than the previous poll are late arrivals or a backfill: not this interval's.
      if (t < state.updatedAt - HOUR_MS) continue;
      fresh++;
      burst += this.burstGain * Math.exp(-this.burstDecayPerMs * Math.max(0, now - t));
    }
    return { events: state.events * keep + fresh, hours: state.hours * keep + exposureHours, burst, updatedAt: now };
  }

  /** Long-run changes per hour. */
  longRunRate(state: RateState): number {
    return (this.config.priorEvents + state.events) / (this.config.priorHours + state.hours);
  }

  /** Burst term at `now`, in changes per hour. */
  burstRate(state: RateState, now: number): number {
    if (state.updatedAt === null || state.burst === 0) return 0;
    return state.burst * Math.exp(-this.burstDecayPerMs * Math.max(0, now - state.updatedAt));
  }

  /** The rate the scheduler plans with: long-run plus burst. */
  effectiveRate(state: RateState, now: number): number {
    return this.longRunRate(state) + this.burstRate(state, now);
  }
}
