import { TENANT_KEYS_MIGRATION } from './tenantKeysMigration.js';

/**
 * The store schema, as numbered migrations applied in order and recorded in `PRAGMA user_version`.
 * Never edit a released migration; append a new one.
 *
 * Tables:
 * - `watched_logs`: one row per log being polled: (log, object_id) with object_id '' for the
 *   company-wide identity-provider log. Holds the cursor (`window_end`: exclusive end, in the
 *   service's clock, of the last window read completely; `coverage_start`: where continuous
 *   coverage began), the detected sort order of the skill log, status (active | disabled | gone)
 *   with a reason, and poll bookkeeping for the scheduler and `changefeed status`.
 * - `seen_entries`: entry ids already ingested, per (log, object_id). Pruned for windowed logs once
 *   older than the overlap horizon plus a margin; kept for the skill log, which has no dates to
 *   filter on and must recognise what it has seen.
 * - `events`: the outbox and journal. One row per ingested entry, its CloudEvent JSON in `payload`,
 *   `seq` giving the ingestion order that every sink follows per object.
 * - `sinks`: sinks known to this store; `active` ones receive a `deliveries` row for each new event.
 * - `deliveries`: per (sink, event) progress: state pending | delivered | dead, attempts, the next
 *   attempt time and the last error. Retry state lives here so it survives restarts.
 * - `sink_state`: per-sink connection and circuit state shown by `changefeed status`.
 * - `meta`: small named values, such as when discovery last completed.
 *
 * Migration 2 adds what dead letters and circuit breaking need: the destination's last status
 * and a truncated response body per delivery, a `filtered` delivery state for events a sink's
 * filter excludes, and per-sink circuit state and the reason a sink was disabled (410 Gone).
 *
 * Migration 3 adds `rate_estimates`: per watched log, the scheduler's learned change rate (decayed
 * event count and observed hours), the average requests per poll, and the planned rate and next
 * poll time that `changefeed status` shows. Kept so a restart keeps what was learned.
 *
 * Migration 4 replaces the burst term by what the session-aware estimator keeps: the decayed
 * count of edit sessions and the newest change's performedAt.
 *
 * Migration 5 adds `quarantine`: entries the service sent that cannot become events (no id, an
 * unparseable performedAt, larger than api.maxEntryBytes), kept with their raw JSON, log and
 * reason for `changefeed quarantine list`. Keyed by a fingerprint of the raw JSON, so a page read
 * again does not record them twice.
 *
 * Migration 6 lets the tenants of a tenants directory share one file and one connection (a
 * connection per tenant cost about 500 KB of native memory each: 500 MB at 1,000 tenants). Every
 * table is rebuilt with `tenant` leading every key, as in the PostgreSQL schema, and a store's
 * existing rows become the tenant `default`. Positions stay what they were: `events.seq` is now
 * per tenant (the key is (tenant, seq)), drawn from `journal_heads`, which starts at the old
 * AUTOINCREMENT counter so a pruned position is never handed out again.
 *
 * Migration 7 adds `watched_logs.first_poll_by`: the time by which a log's first poll is due,
 * set once when it is first watched, so a daemon that restarts often cannot push it back for
 * ever. Logs watched before it are due at once (their creation time).
 *
 * Migration 8 adds `tenant_records`: which tenant owns each API key and the text of each tenant
 * file as it last validated, from which the tenants are decided (docs/tenants.md); the same as
 * PostgreSQL's `changefeed_tenant_records`.
 *
 * Migration 9 adds `tenant_records.missing_since` (ms since the epoch): when a read first missed
 * the tenant's file; the record is forgotten only after `tenants.forgetAfterSeconds` of that.
 */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE watched_logs (
    log TEXT NOT NULL,
    object_id TEXT NOT NULL,
    origin TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'active',
    status_reason TEXT,
    coverage_start INTEGER,
    window_end INTEGER,
    sort_order TEXT,
    last_poll_at INTEGER,
    last_success_at INTEGER,
    last_error TEXT,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    next_poll_at INTEGER NOT NULL DEFAULT 0,
    entries_ingested INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (log, object_id)
  ) WITHOUT ROWID;

  CREATE TABLE seen_entries (
    log TEXT NOT NULL,
    object_id TEXT NOT NULL,
    entry_id TEXT NOT NULL,
    performed_at INTEGER,
    seen_at INTEGER NOT NULL,
    PRIMARY KEY (log, object_id, entry_id)
  ) WITHOUT ROWID;

  CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id TEXT NOT NULL UNIQUE,
    log TEXT NOT NULL,
    object_id TEXT NOT NULL,
    type TEXT NOT NULL,
    performed_at INTEGER,
    ingested_at INTEGER NOT NULL,
    payload TEXT NOT NULL
  );
  CREATE INDEX events_by_ingested_at ON events (ingested_at);

  CREATE TABLE sinks (
    name TEXT PRIMARY KEY,
    type TEXT NOT NULL,
    active INTEGER NOT NULL,
    registered_at INTEGER NOT NULL
  ) WITHOUT ROWID;

  CREATE TABLE deliveries (
    sink TEXT NOT NULL,
    seq INTEGER NOT NULL REFERENCES events (seq) ON DELETE CASCADE,
    state TEXT NOT NULL DEFAULT 'pending',
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL DEFAULT 0,
    first_attempt_at INTEGER,
    last_error TEXT,
    updated_at INTEGER,
    PRIMARY KEY (sink, seq)
  ) WITHOUT ROWID;
  CREATE INDEX deliveries_by_state ON deliveries (sink, state, seq);
  CREATE INDEX deliveries_by_seq ON deliveries (seq);

  CREATE TABLE sink_state (
    sink TEXT PRIMARY KEY,
    connected INTEGER NOT NULL DEFAULT 0,
    paused_until INTEGER NOT NULL DEFAULT 0,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    last_error_at INTEGER,
    last_delivery_at INTEGER
  ) WITHOUT ROWID;

  CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
  ) WITHOUT ROWID;
  `,
  `
  ALTER TABLE deliveries ADD COLUMN last_status INTEGER;
  ALTER TABLE deliveries ADD COLUMN last_response TEXT;
  ALTER TABLE sink_state ADD COLUMN circuit TEXT NOT NULL DEFAULT 'closed';
  ALTER TABLE sink_state ADD COLUMN disabled_reason TEXT;
  CREATE INDEX deliveries_dead ON deliveries (sink, state) WHERE state = 'dead';
  `,
  `
  CREATE TABLE rate_estimates (
    log TEXT NOT NULL,
    object_id TEXT NOT NULL,
    events REAL NOT NULL DEFAULT 0,
    hours REAL NOT NULL DEFAULT 0,
    burst REAL NOT NULL DEFAULT 0,
    updated_at INTEGER,
    poll_cost REAL NOT NULL DEFAULT 1,
    planned_rate REAL,
    next_poll_at INTEGER,
    PRIMARY KEY (log, object_id)
  ) WITHOUT ROWID;
  `,
  `
  ALTER TABLE rate_estimates ADD COLUMN sessions REAL NOT NULL DEFAULT 0;
  ALTER TABLE rate_estimates ADD COLUMN last_event_at INTEGER;
  UPDATE rate_estimates SET sessions = events;
  ALTER TABLE rate_estimates DROP COLUMN burst;
  `,
  `
  CREATE TABLE quarantine (
    log TEXT NOT NULL,
    object_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    entry_id TEXT,
    reason TEXT NOT NULL,
    raw TEXT NOT NULL,
    raw_bytes INTEGER NOT NULL,
    request_id TEXT,
    first_seen_at INTEGER NOT NULL,
    PRIMARY KEY (log, object_id, fingerprint)
  ) WITHOUT ROWID;
  `,
  TENANT_KEYS_MIGRATION,
  `
  ALTER TABLE watched_logs ADD COLUMN first_poll_by INTEGER NOT NULL DEFAULT 0;
  UPDATE watched_logs SET first_poll_by = created_at;
  `,
  `
  CREATE TABLE tenant_records (
    tenant TEXT PRIMARY KEY,
    key_fingerprint TEXT NOT NULL UNIQUE,
    file_text TEXT NOT NULL,
    recorded_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  `,
  `
  ALTER TABLE tenant_records ADD COLUMN missing_since INTEGER;
  `,
];
