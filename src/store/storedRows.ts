import { createHash } from 'node:crypto';
import type { QuarantinedEntry } from '../api/quarantinedEntry.js';
import type { LogKind } from '../logs.js';
import type {
  CircuitState,
  DeadLetter,
  DeliveryCounts,
  PendingDelivery,
  QuarantineRecord,
  RateEstimateRow,
  SinkStateRow,
  SortOrder,
  WatchedLog,
  WatchOrigin,
  WatchStatus,
} from './storeRecords.js';

/**
 * The rows both store engines read, column for column the same in SQLite and PostgreSQL (the
 * tenant column aside), and the one mapping of each to its record: an engine differs in its SQL,
 * never in what a row means.
 */

export interface WatchedLogRow {
  log: LogKind;
  object_id: string;
  origin: WatchOrigin;
  status: WatchStatus;
  status_reason: string | null;
  coverage_start: number | null;
  window_end: number | null;
  sort_order: SortOrder | null;
  last_poll_at: number | null;
  last_success_at: number | null;
  last_error: string | null;
  consecutive_failures: number;
  next_poll_at: number;
  entries_ingested: number;
  created_at: number;
  first_poll_by: number;
}

export const watchedLogFromRow = (r: WatchedLogRow): WatchedLog => ({
  log: r.log,
  objectId: r.object_id,
  origin: r.origin,
  status: r.status,
  statusReason: r.status_reason,
  coverageStart: r.coverage_start,
  windowEnd: r.window_end,
  sortOrder: r.sort_order,
  lastPollAt: r.last_poll_at,
  lastSuccessAt: r.last_success_at,
  lastError: r.last_error,
  consecutiveFailures: r.consecutive_failures,
  nextPollAt: r.next_poll_at,
  entriesIngested: r.entries_ingested,
  createdAt: r.created_at,
  firstPollBy: r.first_poll_by,
});

/** A dead delivery joined with its event. */
export interface DeadLetterRow {
  sink: string;
  seq: number;
  event_id: string;
  type: string;
  log: LogKind;
  object_id: string;
  attempts: number;
  last_error: string | null;
  last_status: number | null;
  last_response: string | null;
  first_attempt_at: number | null;
  updated_at: number | null;
}

export const deadLetterFromRow = (r: DeadLetterRow): DeadLetter => ({
  sink: r.sink,
  seq: r.seq,
  eventId: r.event_id,
  type: r.type,
  log: r.log,
  objectId: r.object_id,
  attempts: r.attempts,
  lastError: r.last_error,
  lastStatus: r.last_status,
  lastResponse: r.last_response,
  firstAttemptAt: r.first_attempt_at,
  deadAt: r.updated_at,
});

export interface QuarantineRow {
  log: LogKind;
  object_id: string;
  entry_id: string | null;
  reason: string;
  raw: string;
  raw_bytes: number;
  request_id: string | null;
  first_seen_at: number;
}

export const quarantineFromRow = (r: QuarantineRow): QuarantineRecord => ({
  log: r.log,
  objectId: r.object_id,
  entryId: r.entry_id,
  reason: r.reason,
  raw: r.raw,
  rawBytes: r.raw_bytes,
  requestId: r.request_id,
  firstSeenAt: r.first_seen_at,
});

/** Keys a quarantined entry, so a page read again records it once; the same in both engines (store migrate copies it). */
export const quarantineFingerprint = (entry: QuarantinedEntry): string =>
  createHash('sha256').update(`${entry.rawBytes}:${entry.raw}`).digest('hex');

export interface RateEstimateDbRow {
  log: LogKind;
  object_id: string;
  events: number;
  hours: number;
  sessions: number;
  last_event_at: number | null;
  updated_at: number | null;
  poll_cost: number;
  planned_rate: number | null;
  next_poll_at: number | null;
}

export const rateEstimateFromRow = (r: RateEstimateDbRow): RateEstimateRow => ({
  log: r.log,
  objectId: r.object_id,
  events: r.events,
  hours: r.hours,
  sessions: r.sessions,
  lastEventAt: r.last_event_at,
  updatedAt: r.updated_at,
  pollCost: r.poll_cost,
  plannedRate: r.planned_rate,
  nextPollAt: r.next_poll_at,
});

/** A pending delivery joined to its event, as both stores select it. */
export interface PendingDeliveryRow {
  seq: number;
  event_id: string;
  log: LogKind;
  object_id: string;
  type: string;
  attempts: number;
  next_attempt_at: number;
  first_attempt_at: number | null;
  ingested_at: number;
}

export const pendingDeliveryFromRow = (r: PendingDeliveryRow): PendingDelivery => ({
  seq: r.seq,
  eventId: r.event_id,
  log: r.log,
  objectId: r.object_id,
  type: r.type,
  attempts: r.attempts,
  nextAttemptAt: r.next_attempt_at,
  firstAttemptAt: r.first_attempt_at,
  ingestedAt: r.ingested_at,
});

/** A sink joined to its state row; flags are 0 and 1 on SQLite, booleans on PostgreSQL. */
export interface SinkStateDbRow {
  name: string;
  type: string;
  active: number | boolean;
  registered_at: number;
  connected: number | boolean | null;
  paused_until: number | null;
  consecutive_failures: number | null;
  last_error: string | null;
  last_error_at: number | null;
  last_delivery_at: number | null;
  circuit: CircuitState | null;
  disabled_reason: string | null;
  failing_since: number | null;
}

export const sinkStateFromRow = (r: SinkStateDbRow): SinkStateRow => ({
  name: r.name,
  type: r.type,
  active: r.active === 1 || r.active === true,
  registeredAt: r.registered_at,
  connected: r.connected === 1 || r.connected === true,
  pausedUntil: r.paused_until ?? 0,
  consecutiveFailures: r.consecutive_failures ?? 0,
  lastError: r.last_error,
  lastErrorAt: r.last_error_at,
  lastDeliveryAt: r.last_delivery_at,
  circuit: r.circuit ?? 'closed',
  disabledReason: r.disabled_reason,
  failingSince: r.failing_since,
});

/** A sink's deliveries in one state, and for `pending` the ingestion time of the first in journal order. */
export interface DeliveryCountRow {
  state: string;
  n: number;
  oldest: number | null;
}

export function deliveryCountsFromRows(rows: readonly DeliveryCountRow[]): DeliveryCounts {
  const counts: DeliveryCounts = { pending: 0, delivered: 0, dead: 0, filtered: 0, oldestPendingIngestedAt: null };
  for (const row of rows) {
    if (row.state === 'pending') {
      counts.pending = row.n;
      counts.oldestPendingIngestedAt = row.oldest;
    } else if (row.state === 'delivered') counts.delivered = row.n;
    else if (row.state === 'dead') counts.dead = row.n;
    else if (row.state === 'filtered') counts.filtered = row.n;
  }
  return counts;
}
