import { createHash } from 'node:crypto';
import type { QuarantinedEntry } from '../api/quarantinedEntry.js';
import type { CircuitState, DeliveryCounts, SinkStateRow, WatchedLog } from './storeRecords.js';

/**
 * The rows both store engines read, column for column the same in SQLite and PostgreSQL (the
 * tenant column aside), and the one mapping of each to its record: an engine differs in its SQL,
 * never in what a row means. A column is its field's name in snake_case; a query selects the
 * columns in the order of the record's fields, so a record has the same keys in the same order
 * whichever engine read it.
 */

/** `firstPollBy` -> `first_poll_by`. */
type ColumnName<K extends string> = K extends `${infer Head}${infer Rest}`
  ? `${Head extends Lowercase<Head> ? Head : `_${Lowercase<Head>}`}${ColumnName<Rest>}`
  : K;

/** A record as its row holds it: each field under its column's name. */
export type RowOf<T> = { [K in keyof T & string as ColumnName<K>]: T[K] };

// Column name -> field name, worked out once per column: fromRow runs for every row the store reads.
const fieldNames = new Map<string, string>();

function fieldNameOf(column: string): string {
  let field = fieldNames.get(column);
  if (field === undefined) {
    field = column.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
    fieldNames.set(column, field);
  }
  return field;
}

/** The record of a row: each column under its field's name. */
export function fromRow<T>(row: RowOf<T>): T {
  const record: Record<string, unknown> = {};
  for (const [column, value] of Object.entries(row)) record[fieldNameOf(column)] = value;
  return record as T;
}

/**
 * The values of a watched log's text columns that name a kind, origin, status or sort order: a
 * row read from the store carries a string of its own for each, and a log's record is held for as
 * long as it is watched (its poll loop's scheduler keeps one per log).
 */
const WATCHED_LOG_NAMES = new Map(
  [
    ...['career', 'skill', 'identity_provider'],
    ...['config', 'discovered', 'appeared'],
    ...['active', 'disabled', 'gone'],
    ...['newest-first', 'oldest-first'],
  ].map((name) => [name, name]),
);

function sharedName<T extends string | null>(value: T): T {
  return value === null ? value : ((WATCHED_LOG_NAMES.get(value) ?? value) as T);
}

/**
 * The record of a watched-log row (fromRow's result, field for field), built in one literal (a
 * record grown a field at a time keeps most fields in a second array), its names the process's
 * shared strings: it is held as long as its log is watched (docs/scaling.md).
 */
export function watchedLogFromRow(row: RowOf<WatchedLog>): WatchedLog {
  return {
    log: sharedName(row.log),
    objectId: row.object_id,
    origin: sharedName(row.origin),
    status: sharedName(row.status),
    statusReason: row.status_reason,
    coverageStart: row.coverage_start,
    windowEnd: row.window_end,
    sortOrder: sharedName(row.sort_order),
    lastPollAt: row.last_poll_at,
    lastSuccessAt: row.last_success_at,
    lastError: row.last_error,
    consecutiveFailures: row.consecutive_failures,
    nextPollAt: row.next_poll_at,
    entriesIngested: row.entries_ingested,
    createdAt: row.created_at,
    firstPollBy: row.first_poll_by,
  };
}

/** The columns of a WatchedLog, in its order. */
export const WATCHED_LOG_COLUMNS = `log, object_id, origin, status, status_reason, coverage_start, window_end, sort_order,
  last_poll_at, last_success_at, last_error, consecutive_failures, next_poll_at, entries_ingested, created_at, first_poll_by`;

/** The columns of a RateEstimateRow, in its order. */
export const RATE_ESTIMATE_COLUMNS =
  'log, object_id, events, hours, sessions, last_event_at, updated_at, poll_cost, planned_rate, next_poll_at';

/** The columns of a QuarantineRecord, in its order. */
export const QUARANTINE_COLUMNS = 'log, object_id, entry_id, reason, raw, raw_bytes, request_id, first_seen_at';

/** Keys a quarantined entry, so a page read again records it once; the same in both engines (store migrate copies it). */
export const quarantineFingerprint = (entry: QuarantinedEntry): string =>
  createHash('sha256').update(`${entry.rawBytes}:${entry.raw}`).digest('hex');

/**
 * A sink joined to its state row, which it has once its worker recorded one (null columns
 * before); flags are 0 and 1 on SQLite, booleans on PostgreSQL.
 */
export type SinkStateDbRow = Omit<
  RowOf<SinkStateRow>,
  'active' | 'connected' | 'paused_until' | 'consecutive_failures' | 'circuit'
> & {
  active: number | boolean;
  connected: number | boolean | null;
  paused_until: number | null;
  consecutive_failures: number | null;
  circuit: CircuitState | null;
};

export const sinkStateFromRow = (r: SinkStateDbRow): SinkStateRow => ({
  ...fromRow<SinkStateRow>(r as unknown as RowOf<SinkStateRow>),
  active: r.active === 1 || r.active === true,
  connected: r.connected === 1 || r.connected === true,
  pausedUntil: r.paused_until ?? 0,
  consecutiveFailures: r.consecutive_failures ?? 0,
  circuit: r.circuit ?? 'closed',
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
