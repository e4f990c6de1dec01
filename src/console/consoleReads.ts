import { logKey, type LogKind } from '../logs.js';
import { parsePollHours, POLL_HOURS_META_KEY, type PollHour } from '../poll/pollHours.js';
import { BUDGET_META_KEY } from '../poll/pollRecorder.js';
import type { ChangefeedStore } from '../store/changefeedStore.js';
import type { DeadLetter } from '../store/storeRecords.js';

/** A watched log as the console's logs view shows it. */
export interface LogRow {
  log: LogKind;
  objectId: string;
  status: string;
  statusReason: string | null;
  lastPollAt: number | null;
  /** Service-clock ms: everything before it was read. */
  coveredUntil: number | null;
  lagSeconds: number | null;
  ratePerHour: number | null;
  nextPollAt: number | null;
  consecutiveFailures: number;
  lastError: string | null;
}

export interface SinkRow {
  name: string;
  type: string;
  active: boolean;
  connected: boolean;
  circuit: string;
  disabledReason: string | null;
  pending: number;
  delivered: number;
  dead: number;
  oldestPendingAgeSeconds: number | null;
  lastError: string | null;
  lastDeliveryAt: number | null;
}

/** The read budget as the holder last recorded it (pollRecorder.ts). */
export interface BudgetRow {
  at: number;
  allowancePerHour: number;
  serverRemaining: number | null;
  blockedUntil: number | null;
}

export async function readLogRows(store: ChangefeedStore, now: number): Promise<LogRow[]> {
  const estimates = new Map((await store.rates.list()).map((e) => [logKey(e), e]));
  return (await store.watchedLogs.list()).map((w) => ({
    log: w.log,
    objectId: w.objectId,
    status: w.status,
    statusReason: w.statusReason,
    lastPollAt: w.lastPollAt,
    coveredUntil: w.windowEnd,
    lagSeconds: w.windowEnd === null ? null : Math.max(0, Math.round((now - w.windowEnd) / 1000)),
    ratePerHour: estimates.get(logKey(w))?.plannedRate ?? null,
    nextPollAt: estimates.get(logKey(w))?.nextPollAt ?? null,
    consecutiveFailures: w.consecutiveFailures,
    lastError: w.lastError,
  }));
}

export async function readSinkRows(store: ChangefeedStore, now: number): Promise<SinkRow[]> {
  const rows: SinkRow[] = [];
  for (const s of await store.sinks.list()) {
    const counts = await store.outbox.counts(s.name);
    rows.push({
      name: s.name,
      type: s.type,
      active: s.active,
      connected: s.connected,
      circuit: s.circuit,
      disabledReason: s.disabledReason,
      pending: counts.pending,
      delivered: counts.delivered,
      dead: counts.dead,
      oldestPendingAgeSeconds:
        counts.oldestPendingIngestedAt === null
          ? null
          : Math.max(0, Math.round((now - counts.oldestPendingIngestedAt) / 1000)),
      lastError: s.lastError,
      lastDeliveryAt: s.lastDeliveryAt,
    });
  }
  return rows;
}

export async function readPollHours(store: ChangefeedStore): Promise<PollHour[]> {
  return parsePollHours(await store.getMeta(POLL_HOURS_META_KEY));
}

export async function readBudget(store: ChangefeedStore): Promise<BudgetRow | null> {
  const raw = await store.getMeta(BUDGET_META_KEY);
  if (raw === undefined) return null;
  try {
    const b = JSON.parse(raw) as {
      at?: unknown;
      allowancePerHour?: unknown;
      serverRemaining?: unknown;
      blockedUntil?: unknown;
    };
    if (typeof b.at !== 'number' || typeof b.allowancePerHour !== 'number') return null;
    return {
      at: b.at,
      allowancePerHour: b.allowancePerHour,
      serverRemaining: typeof b.serverRemaining === 'number' ? b.serverRemaining : null,
      blockedUntil: typeof b.blockedUntil === 'number' && b.blockedUntil > b.at ? b.blockedUntil : null,
    };
  } catch {
    return null;
  }
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
