import type { ScheduleConfig } from './scheduleConfig.js';

const HOUR_MS = 3_600_000;

/** Per log: when a follow-up poll is due, and how many ran in a row. */
export interface FollowUpState {
  readonly dueAt: number | null;
  readonly inRow: number;
}

/**
 * Most logs have no follow-up most of the time: they share this one state instead of an object
 * each (26 a tenant, about 1 KB of its heap; docs/scaling.md).
 */
const NO_FOLLOW_UP: FollowUpState = Object.freeze({ dueAt: null, inRow: 0 });

export const noFollowUp = (): FollowUpState => NO_FOLLOW_UP;

export interface PollEvidence {
  /** performedAt (service clock) of the newest change seen before this poll, and after it. */
  previousNewest: number | null;
  newest: number | null;
  serviceNow: number;
  /** The log's changes per session and change rate (per hour), as estimated now. */
  changesPerSession: number;
  ratePerHour: number;
}

/**
 * Follow-up polls of edit sessions in progress (docs/scheduling.md): the log is polled again after
 * the minimum interval, up to followUpPolls times in a row. Follow-ups of the last hour are left
 * out of what the allocation divides, so they never exceed the budget.
 */
export class SessionFollowUps {
  private readonly recent: number[] = [];

  constructor(
    private readonly config: Pick<ScheduleConfig, 'followUpPolls' | 'sessionGapSeconds'>,
    private readonly minIntervalMs: number,
  ) {}

  /**
   * True when the poll found a session still going on: a new change, performed within the gap,
   * on a log whose changes cluster beyond chance. At rate λ, independent changes less than a gap
   * G apart form runs of e^(λG) on average, so a busy log's changes run together without any
   * session behind them; follow-ups pay off only for real sessions.
   */
  inProgress(e: PollEvidence): boolean {
    const gapMs = this.config.sessionGapSeconds * 1000;
    if (e.newest === null || e.newest === e.previousNewest || e.newest < e.serviceNow - gapMs) return false;
    return e.changesPerSession >= 2 * Math.exp((e.ratePerHour * gapMs) / HOUR_MS);
  }

  /** The log's follow-up state after a poll at `now`. */
  afterPoll(state: FollowUpState, now: number, sessionInProgress: boolean): FollowUpState {
    if (state.dueAt !== null && state.dueAt <= now) this.recent.push(now);
    if (!sessionInProgress || state.inRow >= this.config.followUpPolls) return noFollowUp();
    return { dueAt: now + this.minIntervalMs, inRow: state.inRow + 1 };
  }

  /** Follow-up polls sent in the hour before `now`. */
  lastHour(now: number): number {
    while (this.recent.length > 0 && (this.recent[0] as number) <= now - HOUR_MS) this.recent.shift();
    return this.recent.length;
  }
}
