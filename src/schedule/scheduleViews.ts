import type { LogKind } from '../logs.js';

/** What the scheduler shows of its decisions: to `plan`, `status` and the metrics. */

export interface PlannedLog {
  log: LogKind;
  objectId: string;
  /** Changes per hour the plan uses (the learned rate). */
  rate: number;
  /** Planned polls per hour. */
  frequency: number;
  /** When the log becomes due. */
  nextPollAt: number;
}

export interface ScheduleSnapshot {
  alpha: number;
  pollBudgetPerHour: number;
  followUpsLastHour: number;
}
