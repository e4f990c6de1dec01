/**
 * When a log that is behind says how far it has come: a backfill of hours of history is one long
 * run of pages that would otherwise look like a hang. A log that is behind logs a line every
 * PROGRESS_EVERY_MS, and one when it has caught up; a shorter backfill says nothing.
 */

/** How often a log that is behind reports its progress, on the poller's clock. */
export const PROGRESS_EVERY_MS = 10_000;

/** A log's backfill since it was first seen behind. */
export interface BackfillState {
  /** When the log was first seen behind (the poller's clock). */
  since: number;
  lastLineAt: number;
  pages: number;
  entries: number;
  /** Progress lines logged: a backfill that logged none ends without a "caught up" line too. */
  lines: number;
}

/** What the log's walk has done since the previous observation, and where its coverage is now. */
export interface ProgressObservation {
  /** The poller's clock. */
  now: number;
  /** The service's clock, which coverage is compared with. */
  serviceNow: number;
  /** The end of what is committed: everything before it has been read. */
  coveredUntil: number;
  /** Pages and entries read since the previous observation. */
  pages: number;
  entries: number;
}

export type ProgressLine =
  | {
      kind: 'behind';
      pages: number;
      entries: number;
      coveredUntil: number;
      behindSeconds: number;
      entriesPerSecond: number;
    }
  | { kind: 'caughtUp'; pages: number; entries: number; seconds: number };

/**
 * The log's backfill state after `observation`, and the line to log, if any. A log is behind while
 * its coverage ends more than `behindMs` before the service's now (the same distance that makes
 * its pages backfill in the read budget).
 */
export function backfillProgress(
  state: BackfillState | undefined,
  observation: ProgressObservation,
  behindMs: number,
): { state: BackfillState | undefined; line?: ProgressLine } {
  const { now, serviceNow, coveredUntil } = observation;
  const behind = serviceNow - coveredUntil > behindMs;
  const current: BackfillState | undefined = state && {
    ...state,
    pages: state.pages + observation.pages,
    entries: state.entries + observation.entries,
  };
  if (!current) {
    if (!behind) return { state: undefined };
    return {
      state: { since: now, lastLineAt: now, pages: observation.pages, entries: observation.entries, lines: 0 },
    };
  }
  if (!behind) {
    if (current.lines === 0) return { state: undefined };
    const seconds = Math.round((now - current.since) / 1000);
    return { state: undefined, line: { kind: 'caughtUp', pages: current.pages, entries: current.entries, seconds } };
  }
  if (now - current.lastLineAt < PROGRESS_EVERY_MS) return { state: current };
  const elapsedSeconds = Math.max(1, (now - current.since) / 1000);
  return {
    state: { ...current, lastLineAt: now, lines: current.lines + 1 },
    line: {
      kind: 'behind',
      pages: current.pages,
      entries: current.entries,
      coveredUntil,
      behindSeconds: Math.round((serviceNow - coveredUntil) / 1000),
      entriesPerSecond: Math.round((current.entries / elapsedSeconds) * 10) / 10,
    },
  };
}
