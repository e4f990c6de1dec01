import { performedAtMs, type ActivityEntry } from '../api/activityEntry.js';
import { pageItemCount } from '../api/activityReader.js';
import { MAX_PAGE_LIMIT } from '../logs.js';
import type { SortOrder } from '../store/storeRecords.js';
import type { LogHistory } from '../schedule/rateState.js';
import { detectSortOrder } from './sortOrder.js';
import type { ScheduleConfig } from '../schedule/scheduleConfig.js';
import type { TimeWindow } from './timeWindow.js';
import { readWindowPage, type WindowWalk } from './windowWalker.js';

/*
 * A week of history tells a busy log from a quiet one before the first allocation, where a day of
 * polls shows most logs zero or one edit session. So the first poll of a log also reads the
 * `historyHours` before its coverage starts, for the rate estimate only: none of it is emitted.
 */

type HistoryProbe = Pick<WindowWalk, 'client' | 'log' | 'objectId' | 'priority' | 'signal'> & {
  /** The log's first window, [coverage start, service now). */
  window: TimeWindow;
  historyMs: number;
  /** The log's page size (pageSize.ts). */
  limit?: number | undefined;
};

export interface HistoryProbeResult {
  /** Undefined when the page held too few dated entries to measure a span. */
  history: LogHistory | undefined;
  /**
   * Every entry of the first window, when the page held the whole span (it was not full and
   * every entry was dated): the first window needs no read of its own.
   */
  firstWindow: ActivityEntry[] | undefined;
  detectedOrder: SortOrder | undefined;
}

/**
 * One page of a date-filtered log over [window.from − historyMs, window.to). A quiet log's page
 * holds the whole span, so the history and the first window cost one request together. A busy
 * log fills the page: its entries, oldest-first or newest-first, cover exactly the span from the
 * first to the last of them, which is a sample large enough for a rate; the caller then reads
 * the first window as usual.
 */
export async function probeHistory(probe: HistoryProbe): Promise<HistoryProbeResult> {
  const from = probe.window.from - probe.historyMs;
  const limit = probe.limit ?? MAX_PAGE_LIMIT;
  const page = await readWindowPage(probe, { from, to: probe.window.to }, 0, limit);
  const dated = page.entries.map(performedAtMs).filter((t): t is number => t !== null);
  const detectedOrder = detectSortOrder(page.entries);
  if (pageItemCount(page) >= limit) return { history: spanOf(dated), firstWindow: undefined, detectedOrder };
  // The server filtered [from, to), so the first window is the page's tail; an undated or
  // quarantined entry cannot be placed in it, and the first window is then read on its own.
  const allDated = dated.length === page.entries.length && page.quarantined.length === 0;
  return {
    history: { fromMs: from, toMs: probe.window.to, performedAt: dated },
    firstWindow: allDated ? page.entries.filter((e) => (performedAtMs(e) as number) >= probe.window.from) : undefined,
    detectedOrder,
  };
}

/** How far back a log's first poll reads for its rate: only the adaptive policy uses rates. */
export function historyLookbackMs(schedule: Pick<ScheduleConfig, 'policy' | 'historyHours'>): number {
  return schedule.policy === 'adaptive' ? schedule.historyHours * 3_600_000 : 0;
}

/**
 * The history in a skill's version log, which has no date filter: its first read (the baseline)
 * returns the whole log anyway, so this costs nothing. A log that begins within the lookback is
 * observed from its first entry (the skill's creation) on.
 */
export function versionLogHistory(
  entries: readonly ActivityEntry[],
  serviceNow: number,
  historyMs: number,
): LogHistory | undefined {
  const dated = entries
    .map(performedAtMs)
    .filter((t): t is number => t !== null && t <= serviceNow)
    .sort((a, b) => a - b);
  const oldest = dated[0];
  if (oldest === undefined) return undefined;
  const lookbackFrom = serviceNow - historyMs;
  if (oldest < lookbackFrom)
    return { fromMs: lookbackFrom, toMs: serviceNow, performedAt: dated.filter((t) => t >= lookbackFrom) };
  return { fromMs: oldest, toMs: serviceNow, performedAt: dated.slice(1) };
}

/** A full page's entries cover exactly the span between the first and the last of them. */
function spanOf(dated: readonly number[]): LogHistory | undefined {
  if (dated.length < 2) return undefined;
  const sorted = [...dated].sort((a, b) => a - b);
  // The first entry opens the span; the changes inside it are the others.
  return { fromMs: sorted[0] as number, toMs: sorted.at(-1) as number, performedAt: sorted.slice(1) };
}
