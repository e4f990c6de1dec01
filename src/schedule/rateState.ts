/*
 * What the scheduler learns about one log, shared by the estimator that updates it and the prior
 * fitted over all of them (each of which needs the other's functions, not each other's types).
 */

/** What is kept per log (and persisted, so a restart keeps what was learned). */
export interface RateState {
  /** Decayed count of changes seen. */
  events: number;
  /** Decayed count of edit sessions among them: changes closer than sessionGapSeconds are one. */
  sessions: number;
  /** Decayed hours of observation behind the counts. */
  hours: number;
  /** performedAt of the newest change seen, so a session spanning two polls is counted once. */
  lastEventAt: number | null;
  /** Clock ms of the last update; null before the first poll. */
  updatedAt: number | null;
}

/** Changes a log's first poll found in [fromMs, toMs] (the service's clock), for a rate alone. */
export interface LogHistory {
  fromMs: number;
  toMs: number;
  performedAt: readonly number[];
}

export const emptyRateState = (): RateState => ({
  events: 0,
  sessions: 0,
  hours: 0,
  lastEventAt: null,
  updatedAt: null,
});
