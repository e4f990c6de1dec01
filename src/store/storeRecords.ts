import type { ActivityEntry } from '../api/activityEntry.js';
import type { QuarantinedEntry } from '../api/quarantinedEntry.js';
import type { ChangeCloudEvent } from '../events/cloudEvent.js';
import type { LogKind } from '../logs.js';

/**
 * What the store holds, as the poller, the delivery engine and the commands see it: the records
 * of the store contract (changefeedStore.ts), the same whatever database keeps them.
 */

export type WatchStatus = 'active' | 'disabled' | 'gone';
export type SortOrder = 'newest-first' | 'oldest-first';
/**
 * How a log came to be watched: listed in the config, found by the first discovery run (the
 * object existed before the daemon watched it), or found by a later one (`appeared`: the object
 * was created since the previous run, so its log holds no history from before that run).
 */
export type WatchOrigin = 'config' | 'discovered' | 'appeared';

/** One polled log: a career's, a skill's, or the company-wide identity-provider log (objectId ''). */
export interface WatchedLog {
  log: LogKind;
  objectId: string;
  origin: WatchOrigin;
  status: WatchStatus;
  statusReason: string | null;
  /** Service-clock ms from which the log is covered without gaps. */
  coverageStart: number | null;
  /** Service-clock ms: exclusive end of the last completely read window (skill: of the last full read). */
  windowEnd: number | null;
  sortOrder: SortOrder | null;
  lastPollAt: number | null;
  lastSuccessAt: number | null;
  lastError: string | null;
  consecutiveFailures: number;
  nextPollAt: number;
  entriesIngested: number;
  createdAt: number;
  /**
   * Clock ms by which the log's first poll is due at the latest: set once, when the log is first
   * watched, so a restart never pushes it back. The scheduler polls a new log sooner when the
   * budget has room.
   */
  firstPollBy: number;
}

/**
 * One kind of a tenant's watched logs, as the coverage and watermark gauges of /metrics show it
 * (WatchedLogStore.coverage).
 */
export interface LogKindCoverage {
  log: LogKind;
  /** Its logs with a gap in coverage: disabled, gone, or failing (a failure since the last success). */
  gaps: number;
  /** The oldest cursor (`windowEnd`) among its active logs that have one; null when none has. */
  oldestActiveWindowEnd: number | null;
}

/** A log to start watching (WatchedLogStore.registerAll). */
export interface WatchRegistration {
  log: LogKind;
  objectId: string;
  origin: WatchOrigin;
  coverageStart: number;
  now: number;
  firstPollBy?: number;
}

export interface IngestRequest {
  log: LogKind;
  objectId: string;
  /** Entries of one completed read, already in ingestion order. */
  entries: readonly ActivityEntry[];
  /** Entries out of the window, recorded as seen but not emitted (history before the start point). */
  silentEntries?: readonly ActivityEntry[];
  /** Entries of the read that cannot become events: kept aside in the same transaction. */
  quarantined?: readonly QuarantinedEntry[];
  /** The new cursor: exclusive end of what this read covered, in the service's clock. */
  windowEnd: number;
  /** Forget seen ids older than this (windowed logs only). */
  pruneSeenBefore?: number;
  /** The log's sort order as this read detected it, recorded with the cursor (WatchedLogStore.setSortOrder). */
  sortOrder?: SortOrder;
  /** The entry's CloudEvent, with id eventIdFor(log, objectId, entry.id): the journal is deduplicated by it. */
  toEvent: (entry: ActivityEntry) => ChangeCloudEvent;
  now: number;
}

export interface IngestResult {
  emitted: number;
  duplicates: number;
  /** performedAt of each emitted entry that has one (detection-delay metrics, rate estimates). */
  emittedPerformedAt: number[];
  /** Entries quarantined for the first time by this read. */
  quarantined: number;
}

/** A delivery that is due or waiting, joined with its event, in ingestion (`seq`) order. */
export interface PendingDelivery {
  seq: number;
  eventId: string;
  log: LogKind;
  objectId: string;
  type: string;
  attempts: number;
  nextAttemptAt: number;
  firstAttemptAt: number | null;
  ingestedAt: number;
  /** The event's CloudEvent JSON, as OutboxStore.payloads returns it: only from a read that asked for it. */
  payload?: string;
}

/** A failed attempt as the engine records it: the error, and what the destination answered. */
export interface FailedDelivery {
  seq: number;
  error: string;
  status?: number | undefined;
  /** Truncated response body. */
  response?: string | undefined;
}

export interface DeliveryCounts {
  pending: number;
  delivered: number;
  dead: number;
  filtered: number;
  /** When the first pending delivery in journal order was ingested (seqs follow ingestion). */
  oldestPendingIngestedAt: number | null;
}

/** A delivery that ran out of attempts, with its event and the last answer of the destination. */
export interface DeadLetter {
  sink: string;
  seq: number;
  eventId: string;
  type: string;
  log: LogKind;
  objectId: string;
  attempts: number;
  lastError: string | null;
  lastStatus: number | null;
  lastResponse: string | null;
  firstAttemptAt: number | null;
  deadAt: number | null;
}

export type CircuitState = 'closed' | 'open' | 'half-open';

/** A sink as the store knows it, with the connection and circuit state its worker last recorded. */
export interface SinkStateRow {
  name: string;
  type: string;
  active: boolean;
  registeredAt: number;
  connected: boolean;
  pausedUntil: number;
  consecutiveFailures: number;
  lastError: string | null;
  lastErrorAt: number | null;
  lastDeliveryAt: number | null;
  circuit: CircuitState;
  /** Why the sink was disabled; it stays so, across restarts, until `changefeed sinks enable`. */
  disabledReason: string | null;
  /** When the destination's current run of endpoint-level failures began; null while it delivers. */
  failingSince: number | null;
}

/** What a sink's worker records of it (SinkStateStore.recordState); the circuit is closed and the sink enabled unless said. */
export type SinkStateUpdate = { sink: string } & Pick<
  SinkStateRow,
  'connected' | 'pausedUntil' | 'consecutiveFailures' | 'lastError' | 'lastErrorAt' | 'lastDeliveryAt'
> &
  Partial<Pick<SinkStateRow, 'circuit' | 'disabledReason' | 'failingSince'>>;

/** An entry the service sent that cannot become an event, kept with its raw JSON. */
export interface QuarantineRecord {
  log: LogKind;
  objectId: string;
  entryId: string | null;
  reason: string;
  raw: string;
  rawBytes: number;
  requestId: string | null;
  firstSeenAt: number;
}

/** The scheduler's learned change rate of one log, kept so a restart keeps what was learned. */
export interface RateEstimateRow {
  log: LogKind;
  objectId: string;
  events: number;
  hours: number;
  sessions: number;
  lastEventAt: number | null;
  updatedAt: number | null;
  pollCost: number;
  plannedRate: number | null;
  nextPollAt: number | null;
}

/**
 * State learned by polling whose loss costs only a refinement, which may wait for the tenant's
 * next write (ChangefeedStore.deferState): learned rates, one per log, and meta values by key.
 */
export interface DeferredState {
  rates?: readonly RateEstimateRow[];
  meta?: Readonly<Record<string, string>>;
}

export interface JournalEvent {
  seq: number;
  /** The CloudEvent JSON exactly as stored. */
  payload: string;
}

/** What one journal read takes: optionally one log, a type glob, and a bound in bytes. */
export interface JournalPageFilter {
  log?: LogKind | undefined;
  /** A glob over the CloudEvent type: `*` any run of characters, `?` one. */
  type?: string | undefined;
  /**
   * Most bytes (UTF-8) of stored JSON the read returns, the first event always: `limit` bounds
   * the rows, but an event may be megabytes, and a thousand of them must not reach the heap.
   * Unbounded when absent.
   */
  maxBytes?: number | undefined;
}

/** The journal events a replay takes: ingested in [since, until), optionally of one log and a type glob. */
export interface JournalRange extends Pick<JournalPageFilter, 'log' | 'type'> {
  since?: number | undefined;
  until?: number | undefined;
}

export interface JournalPage {
  events: JournalEvent[];
  /** Where the next read starts (read after it): past every event this read looked at, matching or not. */
  next: number;
  /** This read looked at everything up to the head: nothing more is there to read now. */
  reachedHead: boolean;
}

/** The meta key of the highest `seq` ever pruned from the journal. */
export const PRUNED_THROUGH_KEY = 'journal.prunedThroughSeq';

/** The meta key counting the dead-letter requeues that changed something (DeadLetterStore.requeueCount). */
export const REQUEUE_COUNT_KEY = 'deadLetters.requeues';

/**
 * Most positions one journal read looks at. A filter that rarely matches would otherwise scan
 * the whole journal on every request; past this a read returns what it found, and `next` where
 * it stopped.
 */
export const MAX_SCAN_POSITIONS = 10_000;

/**
 * Most journal events one prune transaction deletes. A prune of a large journal is many short
 * transactions, not one long one: on PostgreSQL each is a fenced transaction under the fence's
 * statement timeout (a sixth of the lease), on SQLite each returns the process's one connection
 * to the other tenants between batches.
 */
export const PRUNE_BATCH_EVENTS = 1_000;

/**
 * Most journal positions one replay or requeue transaction covers, and one count statement reads
 * (COUNT_WINDOW_EVENTS). A console press on a journal of millions is many short statements in seq
 * order, not one long one: on SQLite the event loop (health, delivery, the other tenants) runs
 * between them, on PostgreSQL no transaction stays open for long.
 */
export const REQUEUE_BATCH_EVENTS = 1_000;

/**
 * How long deferred state (ChangefeedStore.deferState) waits for a write of its tenant before it
 * is written on its own. A tenant polls every few seconds at its default budget, so its state
 * nearly always rides with an ingest.
 */
export const DEFERRED_STATE_FLUSH_MS = 30_000;

/** Most journal positions one statement of a replay count reads (see REQUEUE_BATCH_EVENTS). */
export const COUNT_WINDOW_EVENTS = 20_000;
