import { z } from 'zod';
import { logKey } from '../logs.js';
import { parsePollHours, POLL_HOURS_META_KEY, type PollHour } from '../poll/pollHours.js';
import { BUDGET_META_KEY } from '../poll/pollRecorder.js';
import type { ChangefeedStore } from '../store/changefeedStore.js';
import type { DeadLetter, DeliveryCounts, SinkStateRow, WatchedLog } from '../store/storeRecords.js';

/*
 * What the console's views and `changefeed status` read from a tenant's store: one read each, so
 * both show the same lag, ages and budget.
 */

/** A watched log with its lag (0 or more) and, from its learned rate, when it is next polled. */
export type LogRow = Omit<WatchedLog, 'nextPollAt'> & {
  lagSeconds: number | null;
  ratePerHour: number | null;
  nextPollAt: number | null;
};

/** A sink's recorded state with its outbox counts. */
export type SinkRow = SinkStateRow & DeliveryCounts & { oldestPendingAgeSeconds: number | null };

const budgetSchema = z.object({
  at: z.number(),
  allowancePerHour: z.number(),
  serverRemaining: z.number().nullable().catch(null),
  resetAt: z.number().nullable().catch(null),
  pollBudgetPerHour: z.number().nullable().catch(null),
  blockedUntil: z.number().nullable().catch(null),
});

/** The read budget as the holder last recorded it (pollRecorder.ts, every 30 s while polling). */
export type BudgetRow = z.infer<typeof budgetSchema>;

export async function readLogRows(store: ChangefeedStore, now: number): Promise<LogRow[]> {
  const estimates = new Map((await store.rates.list()).map((e) => [logKey(e), e]));
  return (await store.watchedLogs.list()).map((w) => ({
    ...w,
    lagSeconds: ageSeconds(w.windowEnd, now),
    ratePerHour: estimates.get(logKey(w))?.plannedRate ?? null,
    nextPollAt: estimates.get(logKey(w))?.nextPollAt ?? null,
  }));
}

export async function readSinkRows(store: ChangefeedStore, now: number): Promise<SinkRow[]> {
  const rows: SinkRow[] = [];
  for (const s of await store.sinks.list()) {
    const counts = await store.outbox.counts(s.name);
    rows.push({ ...s, ...counts, oldestPendingAgeSeconds: ageSeconds(counts.oldestPendingIngestedAt, now) });
  }
  return rows;
}

function ageSeconds(since: number | null, now: number): number | null {
  return since === null ? null : Math.max(0, Math.round((now - since) / 1000));
}

export async function readPollHours(store: ChangefeedStore): Promise<PollHour[]> {
  return parsePollHours(await store.getMeta(POLL_HOURS_META_KEY));
}

/** Null when none was recorded or the record cannot be read; a 429 pause over when it was written reads as none. */
export async function readBudget(store: ChangefeedStore): Promise<BudgetRow | null> {
  const raw = await store.getMeta(BUDGET_META_KEY);
  let parsed;
  try {
    parsed = raw === undefined ? undefined : budgetSchema.safeParse(JSON.parse(raw)).data;
  } catch {
    return null;
  }
  if (!parsed) return null;
  const { blockedUntil, at } = parsed;
  return { ...parsed, blockedUntil: blockedUntil !== null && blockedUntil > at ? blockedUntil : null };
}

/** Most dead letters one page lists; `dead-letters list` shows them all. */
export const DEAD_LETTERS_SHOWN = 200;

export function readDeadLetters(store: ChangefeedStore): Promise<DeadLetter[]> {
  return store.deadLetters.list({ limit: DEAD_LETTERS_SHOWN });
}

/** Events emitted in the last hour that has a bucket within the last two hours; null when none. */
export function eventsLastHour(hours: readonly PollHour[], now: number): number | null {
  const recent = hours.filter((b) => b.hour > now - 2 * 3_600_000);
  return recent.length === 0 ? null : (recent.at(-1)?.events ?? null);
}
