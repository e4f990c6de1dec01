import { z } from 'zod';

/**
 * A tenant's last day of polling, one bucket per clock hour, kept in the store's meta under
 * POLL_HOURS_META_KEY by the poll recorder for the console's freshness and budget charts: the
 * store keeps only each log's latest state, and a row per poll would grow with the logs.
 */

export const POLL_HOURS_META_KEY = 'poll.hours';
export const POLL_HOURS_KEPT = 24;
const HOUR_MS = 3_600_000;

const count = z.number().min(0);
const pollHourSchema = z.object({
  /** Start of the hour, clock ms (a multiple of an hour). */
  hour: count,
  /** Requests sent to the service in the hour: polls, discovery and backfill. */
  requests: count,
  /** Requests per hour the read budget allowed itself, as last seen in the hour; null when unknown. */
  allowancePerHour: count.nullable(),
  polls: count,
  failedPolls: count,
  /** Events emitted by the hour's polls. */
  events: count,
  /** How far behind (seconds) the stalest log polled in the hour was as its poll began; null before any cursor. */
  worstLagSeconds: count.nullable(),
});

export type PollHour = z.infer<typeof pollHourSchema>;

/** What one poll adds to its hour. */
export interface PollSample {
  now: number;
  /** Requests sent since the previous sample. */
  requests: number;
  allowancePerHour?: number | undefined;
  /** now − the log's cursor as the poll began; null for a log never read. */
  lagMs: number | null;
  failed: boolean;
  events: number;
}

/** The buckets with `sample` counted in its hour, keeping only the last POLL_HOURS_KEPT hours up to it. */
export function addPollSample(hours: readonly PollHour[], sample: PollSample): PollHour[] {
  const hour = Math.floor(sample.now / HOUR_MS) * HOUR_MS;
  const lagSeconds = sample.lagMs === null ? null : Math.max(0, Math.round(sample.lagMs / 1000));
  const added: PollHour = {
    hour,
    requests: Math.max(0, sample.requests),
    allowancePerHour: sample.allowancePerHour ?? null,
    polls: 1,
    failedPolls: sample.failed ? 1 : 0,
    events: Math.max(0, sample.events),
    worstLagSeconds: lagSeconds,
  };
  // Nearly every poll lands in the hour of the last bucket: that bucket alone changes, without the
  // merge's map and sorted copy of every bucket, per poll, per tenant.
  const last = hours.at(-1);
  if (last?.hour === hour && hours[0]!.hour >= hour - (POLL_HOURS_KEPT - 1) * HOUR_MS)
    return [...hours.slice(0, -1), sumOfHour(last, added)];
  return mergePollHours(hours, [added], hour);
}

/** Two buckets of one hour as one: counts summed, the lag the worse, the allowance the later's. */
function sumOfHour(known: PollHour, bucket: PollHour): PollHour {
  return {
    hour: bucket.hour,
    requests: known.requests + bucket.requests,
    allowancePerHour: bucket.allowancePerHour ?? known.allowancePerHour,
    polls: known.polls + bucket.polls,
    failedPolls: known.failedPolls + bucket.failedPolls,
    events: known.events + bucket.events,
    worstLagSeconds: worse(known.worstLagSeconds, bucket.worstLagSeconds),
  };
}

/**
 * Two sets of buckets as one, the same hour's summed (the lag the worse of both, the allowance
 * the later set's): what a holder counted before it first read what an earlier holder stored.
 * Keeps the POLL_HOURS_KEPT hours up to `latestHour` (default: the latest of either).
 */
export function mergePollHours(
  earlier: readonly PollHour[],
  later: readonly PollHour[],
  latestHour?: number,
): PollHour[] {
  const byHour = new Map<number, PollHour>();
  for (const bucket of [...earlier, ...later]) {
    const known = byHour.get(bucket.hour);
    byHour.set(bucket.hour, known ? sumOfHour(known, bucket) : { ...bucket });
  }
  const latest = latestHour ?? Math.max(...byHour.keys());
  const oldest = latest - (POLL_HOURS_KEPT - 1) * HOUR_MS;
  return [...byHour.values()].filter((b) => b.hour >= oldest && b.hour <= latest).sort((a, b) => a.hour - b.hour);
}

/**
 * The buckets stored under POLL_HOURS_META_KEY; nothing for a value that is absent or not
 * buckets (written by another build, or damaged): the chart starts again, the daemon goes on.
 */
export function parsePollHours(raw: string | undefined): PollHour[] {
  if (raw === undefined) return [];
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return [];
  }
  if (!Array.isArray(value)) return [];
  return value.flatMap((bucket) => pollHourSchema.safeParse(bucket).data ?? []).slice(-POLL_HOURS_KEPT);
}

function worse(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.max(a, b);
}
