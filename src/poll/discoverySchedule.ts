import { CronTime } from 'cron';
import type { WatchConfig } from './watchConfig.js';

/** The next run of a cron expression after `now` (UTC). */
export function nextCronTime(expression: string, now: number): number {
  return new CronTime(expression, 'UTC').getNextDateFrom(new Date(now)).toMillis();
}

/**
 * Why `expression` cannot schedule discovery, or undefined: not cron, or never due (the library
 * gives up after eight years: `0 0 30 2 *`). Checked with the config, not when a tenant starts.
 */
export function cronProblem(expression: string): string | undefined {
  try {
    nextCronTime(expression, Date.now());
    return undefined;
  } catch (error) {
    return `not a cron expression that ever runs (5 or 6 fields, UTC): ${(error as Error).message.split('\n')[0]}`;
  }
}

/** Counts already made, by expression and minute; a process has a few distinct schedules. */
const runsPerHourMemo = new Map<string, number>();
const MAX_MEMO_ENTRIES = 64;

/**
 * Runs per hour of a cron schedule, counted over the next hour (a daily one counts as 1/24).
 * Memoised per expression and minute: each count walks the hour run by run, and every tenant's
 * poll loop asks at its start.
 */
export function cronRunsPerHour(expression: string, now: number): number {
  const key = `${expression}\u0000${Math.floor(now / 60_000)}`;
  let runs = runsPerHourMemo.get(key);
  if (runs === undefined) {
    if (runsPerHourMemo.size >= MAX_MEMO_ENTRIES) runsPerHourMemo.clear();
    runs = countRunsInHour(expression, now);
    runsPerHourMemo.set(key, runs);
  }
  return runs;
}

function countRunsInHour(expression: string, now: number): number {
  let runs = 0;
  for (let t = nextCronTime(expression, now); t <= now + 3_600_000 && runs < 3_600; t = nextCronTime(expression, t))
    runs++;
  return runs > 0 ? runs : 1 / 24;
}

/** Requests one discovery run takes: the pages of each discovered list, the last one partly filled. */
export function discoveryPagesPerRun(watch: WatchConfig, known: { careers: number; skills: number }): number {
  const pageSize = watch.discovery.envelope.pageSize;
  let pages = 0;
  if (watch.careers.discover) pages += Math.floor(known.careers / pageSize) + 1;
  if (watch.skills.discover) pages += Math.floor(known.skills / pageSize) + 1;
  return pages;
}

/** The last discovery a store records: when it started (the service's clock) and the lists it read. */
export interface RecordedDiscovery {
  /** Epoch ms on the service's clock. */
  at: number;
  /** The lists it read (`discoveryLists`' logs, comma-separated); undefined when not recorded. */
  lists: string | undefined;
}

/**
 * When a starting poll loop runs its first discovery. One recorded in the store (before a restart,
 * or by the previous holder of the tenant) keeps the cron schedule, so a new holder polls the logs
 * it knows at once instead of spending its first read-budget slots on the lists. At once when none
 * is recorded, when a cron time passed since (a missed run), or when it read other lists than the
 * config turns on now; never later than the first cron time after `now`. `serviceOffsetMs` is the
 * service's clock minus ours, to bring the recorded time to ours.
 */
export function firstDiscoveryAt(
  now: number,
  schedule: string,
  recorded: RecordedDiscovery | undefined,
  lists: string,
  serviceOffsetMs: number,
): number {
  if (recorded === undefined || recorded.lists !== lists) return now;
  const recordedAt = recorded.at - serviceOffsetMs;
  // Outside the dates a Date holds: unreadable, the same as none recorded.
  if (Number.isNaN(new Date(recordedAt).getTime())) return now;
  // Not yet happened on our clock (a corrupt value, or a service clock ahead not yet measured):
  // waiting for the cron time after it would skip runs; the cron promises one by its next time.
  if (recordedAt > now) return nextCronTime(schedule, now);
  return Math.max(now, nextCronTime(schedule, recordedAt));
}
