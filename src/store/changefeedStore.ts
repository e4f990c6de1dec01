import type { LogKind } from '../logs.js';
import type { StoreHealth } from './storeHealth.js';
import type {
  DeadLetter,
  DeferredState,
  DeliveryCounts,
  FailedDelivery,
  IngestRequest,
  IngestResult,
  JournalPage,
  JournalPageFilter,
  JournalRange,
  LogKindCoverage,
  PendingDelivery,
  QuarantineRecord,
  RateEstimateRow,
  SinkStateRow,
  SinkStateUpdate,
  SortOrder,
  WatchedLog,
  WatchRegistration,
  WatchStatus,
} from './storeRecords.js';

/**
 * The store contract: everything the poller, the delivery engine, the feed and the commands ask
 * of the store, for one tenant. Two implementations keep it: SQLite (sqlite/, the zero-setup
 * default, one file per state directory) and PostgreSQL (postgres/, shared by replicas). Every
 * method is async so the contract can sit on a network database; the SQLite one answers at once.
 *
 * Guarantees both keep (test/store/storeContract.suite.ts runs against each):
 * - `ingest` is one transaction: new entries (deduplicated by entry id), their events, one
 *   pending delivery per active sink, quarantined entries and the cursor advance all commit, or
 *   none does. Which entries are new, duplicates, out of window or quarantined is decided by
 *   decideIngest (ingestDecision.ts), the one rule of every engine.
 * - Journal positions (`seq`) grow in commit order within a tenant and are never reused.
 * - Every change of a delivery's state is one short transaction: after a crash each event is
 *   delivered or still pending (at-least-once).
 * - On a store shared by replicas, every write checks the tenant's lease in its transaction and
 *   fails with LEASE_LOST once another replica may hold it (fencing); deferred state rides in a
 *   fenced transaction too.
 */
export interface ChangefeedStore {
  /** The tenant whose records this is: every event read from it carries this `tenant` attribute. */
  readonly tenant: string;
  /** Where the store is, for messages: a file path or a database URL without its password. */
  readonly location: string;
  /** Whether writes work; see StoreHealth. */
  readonly health: StoreHealth;
  readonly isOpen: boolean;
  readonly watchedLogs: WatchedLogStore;
  readonly seen: SeenEntryStore;
  readonly outbox: OutboxStore;
  readonly deadLetters: DeadLetterStore;
  /** The outbox read as a journal, in ingestion order: the pull feed. */
  readonly journal: JournalStore;
  readonly sinks: SinkStateStore;
  readonly quarantine: QuarantineStore;
  readonly rates: RateEstimateStore;
  /**
   * The single write path from polling. Throws StoreUnavailableError when the store cannot be
   * written (disk full, database away): nothing of the read is kept, the cursor stays.
   */
  ingest(request: IngestRequest): Promise<IngestResult>;
  /**
   * Writes `state` with the tenant's next write transaction (an ingest, a delivery's outcome), or
   * on its own within DEFERRED_STATE_FLUSH_MS when none comes; the last value of a log's rate or a
   * meta key wins. A store may hold learned rates a while first, to write several polls' in one
   * statement (PostgreSQL: RATE_RIDE_AFTER_MS); one that answers at once (SQLite) may write it now. State given here is
   * lost if the process dies first, and a write that the lease fence refuses drops it: only for
   * state whose loss costs a refinement, never a cursor or a delivery.
   */
  deferState(state: DeferredState): void;
  /** Writes what deferState holds now; what cannot be written waits for the next write. */
  flushDeferred(): Promise<void>;
  /**
   * The tenant's start is over. A store whose connections its tenants share (PostgreSQL) lets
   * the statements of tenants starting go first until then, so a start (a dozen statements in a
   * row) does not wait behind every running tenant's polls once per statement. Optional: a store
   * without a shared pool has nothing to order.
   */
  running?(): void;
  getMeta(key: string): Promise<string | undefined>;
  setMeta(key: string, value: string): Promise<void>;
  /** How many events the journal holds now. */
  journalSize(): Promise<number>;
  close(): Promise<void>;
}

/** Cursors and status of the watched logs. */
export interface WatchedLogStore {
  get(log: LogKind, objectId: string): Promise<WatchedLog | undefined>;
  list(): Promise<WatchedLog[]>;
  /**
   * Per kind of log the tenant watches, its gaps and oldest active cursor, counted by the
   * database (a scrape asks it of every tenant: cheaper than reading their rows): what /metrics
   * shows of the watched logs. A kind with no log watched is absent.
   */
  coverage(): Promise<LogKindCoverage[]>;
  /**
   * Starts watching each log of `registrations` unless it is already watched (its cursor is then
   * kept), in one write: discovery's list is one transaction, not one per log. `coverageStart` is
   * where emission starts: the service's "now" by default, or a configured startFrom.
   * `firstPollBy` (default `now`) is kept only when the log is new: the deadline of its first
   * poll, which a restart must not push back. Returns how many logs were new.
   */
  registerAll(registrations: readonly WatchRegistration[]): Promise<number>;
  recordFailure(log: LogKind, objectId: string, error: string, now: number): Promise<void>;
  setStatus(log: LogKind, objectId: string, status: WatchStatus, reason: string | null): Promise<void>;
  setSortOrder(log: LogKind, objectId: string, order: SortOrder): Promise<void>;
}

/** Entry ids already ingested, per log. Written only by `ingest`. */
export interface SeenEntryStore {
  /** Which of `entryIds` were already ingested for this log: one question per page, not per entry. */
  seenAmong(log: LogKind, objectId: string, entryIds: readonly string[]): Promise<Set<string>>;
}

/** Events in ingestion order and, per active sink, one delivery row each. */
export interface OutboxStore {
  /**
   * Up to `limit` pending deliveries of `sink` with seq > afterSeq, due or not, in seq order;
   * without payloads unless `withPayloads`: then each row carries its event's CloudEvent JSON, for
   * a small page whose rows go out next (a sink that has caught up), saving their `payloads` read.
   */
  pending(sink: string, afterSeq: number, limit: number, withPayloads?: boolean): Promise<PendingDelivery[]>;
  /** The CloudEvent JSON of the given events. Kept out of most `pending` reads, which scan far more rows than they send. */
  payloads(seqs: readonly number[]): Promise<Map<number, string>>;
  /**
   * The deliveries settled as delivered, and `now` recorded as the sink's last delivery (once the
   * sink has a recorded state, SinkStateStore.recordState) in the same transaction: a delivered
   * batch is one write.
   */
  markDelivered(sink: string, seqs: readonly number[], now: number): Promise<void>;
  scheduleRetry(
    sink: string,
    retries: readonly (FailedDelivery & { nextAttemptAt: number })[],
    now: number,
  ): Promise<void>;
  markDead(sink: string, dead: readonly FailedDelivery[], now: number): Promise<void>;
  /** Events the sink's filter excludes: settled without being sent. */
  markFiltered(sink: string, seqs: readonly number[], now: number): Promise<void>;
  /**
   * Queues journal events for `sink` again (replay), with a fresh attempt budget, whatever their
   * delivery state: events ingested in [since, until), optionally of one log and with a type
   * matching a glob (as JournalPageFilter's). Adds deliveries for events the sink never had (a
   * sink added later). Returns how many were queued.
   *
   * Writes REQUEUE_BATCH_EVENTS journal positions per transaction in seq order, from the first
   * event to the head when it starts, so no replay holds the process (SQLite) or a transaction
   * (PostgreSQL) for long. One press queues each event once; if it stops part way, the batches it
   * wrote stay queued, and a second press queues the range again, still one delivery per event.
   * Each batch that queued something is counted in `DeadLetterStore.requeueCount`, in its own
   * transaction: the daemon holding the tenant (maybe another process) takes it up from there.
   */
  enqueueFromJournal(sink: string, range: JournalRange, now: number): Promise<number>;
  /**
   * How many events `enqueueFromJournal` with this range would queue now: a replay's count before
   * it is queued. Read COUNT_WINDOW_EVENTS journal positions per statement.
   */
  countFromJournal(range: JournalRange): Promise<number>;
  counts(sink: string): Promise<DeliveryCounts>;
  /**
   * Drops journal entries older than `before` that no sink still waits for; returns how many.
   * Deletes in transactions of at most PRUNE_BATCH_EVENTS events each, and stops between two
   * when `signal` aborts (what was deleted stays deleted and is counted).
   */
  prune(before: number, signal?: AbortSignal): Promise<number>;
}

export interface DeadLetterStore {
  list(filter?: { sink?: string; eventId?: string; limit?: number }): Promise<DeadLetter[]>;
  /**
   * Every dead delivery of the sink back to pending with a fresh attempt budget, REQUEUE_BATCH_EVENTS
   * per transaction in seq order, each counted in `requeueCount`. Stopped part way, a second call
   * takes up the letters still dead.
   */
  requeueSink(sink: string, now: number): Promise<number>;
  /** One event's dead deliveries (of one sink, or all) back to pending. */
  requeueEvent(eventId: string, sink: string | undefined, now: number): Promise<number>;
  /**
   * How many requeue writes (a command, or a batch of one) changed something, dead letters put back
   * and journal events queued again (`OutboxStore.enqueueFromJournal`): a running daemon watches
   * it, and reads its outbox afresh when it moves (re-queued deliveries have old seqs, which its
   * in-memory window of pending deliveries has already passed).
   */
  requeueCount(): Promise<number>;
}

/**
 * The journal read in ingestion order by consumers that hold their own position (the pull feed
 * and its live stream). A position below `prunedThrough` may have missed events: the feed says so
 * (410) instead of skipping them silently.
 */
export interface JournalStore {
  /** The highest seq ever assigned; 0 before the first event. */
  head(): Promise<number>;
  /** The highest seq pruned so far; 0 when nothing was. */
  prunedThrough(): Promise<number>;
  /**
   * Up to `limit` events after `after`, optionally of one log and with a type matching a glob
   * (`*` any run, `?` one character), looking at no more than MAX_SCAN_POSITIONS positions, and
   * stopping before `filter.maxBytes` of JSON (after the first event): then `next` is the last
   * event returned, so the next read starts with the first one left out.
   */
  page(after: number, limit: number, filter?: JournalPageFilter): Promise<JournalPage>;
}

export interface SinkStateStore {
  /**
   * Marks exactly the configured sinks active; returns the names that were never known before. A
   * new sink receives the events ingested after its registration, not the journal's history.
   */
  activate(configured: readonly { name: string; type: string }[], now: number): Promise<string[]>;
  /**
   * Records a sink's state for `status` and for the next start. With `guard`, only while the
   * store still holds the disabled state the caller last read or wrote (`guard.disabledReason`,
   * null for enabled): a worker's in-memory state must never undo a `changefeed sinks enable` it
   * has not seen yet. False when the guard refused the write (nothing was written).
   */
  recordState(state: SinkStateUpdate, guard?: { disabledReason: string | null }): Promise<boolean>;
  /**
   * Clears a sink's disabled state and its run of endpoint-level failures (`changefeed sinks
   * enable`); a running daemon sees it within seconds and delivers again. True when it was disabled.
   */
  enable(sink: string): Promise<boolean>;
  list(): Promise<SinkStateRow[]>;
}

/**
 * Entries the service sent that cannot become events. Written only by `ingest`, each raw entry
 * once (quarantineFingerprint), however often its page is read again.
 */
export interface QuarantineStore {
  count(): Promise<number>;
  list(filter?: { log?: LogKind; limit?: number }): Promise<QuarantineRecord[]>;
}

export interface RateEstimateStore {
  list(): Promise<RateEstimateRow[]>;
}
