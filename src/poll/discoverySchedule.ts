import { CronTime } from 'cron';
import type { WatchConfig } from './watchConfig.js';

/** The next run of a cron expression after `now` (UTC). */
export function nextCronTime(expression: string, now: number): number {
  return new CronTime(expression, 'UTC').getNextDateFrom(new Date(now)).toMillis();
}

/** Runs per hour of a cron schedule, counted over the next hour (a daily one counts as 1/24). */
export function cronRunsPerHour(expression: string, now: number): number {
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
