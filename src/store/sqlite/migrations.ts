/**
 * The SQLite store's schema: `BASELINE`, the schema of release 1.0.0 (version 100,
 * ../schemaVersion.ts), created whole on a new file, then `MIGRATIONS`, versions 101, 102, ...,
 * applied in order by database.ts. Never edit the baseline or a released migration: append a
 * migration, and test/store/schemaBaseline.test.ts checks that a 1.0.0 store migrated to this
 * build's schema equals a new one (docs/operations.md, "Schema changes").
 *
 * Every table has `tenant` leading every key, as in the PostgreSQL schema: the tenants of a
 * process share one file and one connection (SqliteStoreBackend). Times are milliseconds since
 * the epoch.
 *
 * - `watched_logs`: one row per log being polled: (log, object_id) with object_id '' for the
 *   company-wide identity-provider log. Holds the cursor (`window_end`: exclusive end, in the
 *   service's clock, of the last window read completely; `coverage_start`: where continuous
 *   coverage began), the detected sort order of the skill log, status (active | disabled | gone)
 *   with a reason, and poll bookkeeping for the scheduler and `changefeed status`.
 *   `first_poll_by` is when its first poll is due, set once when it is first watched, so a daemon
 *   that restarts often cannot push it back for ever.
 * - `seen_entries`: entry ids already ingested, per (log, object_id). Pruned for windowed logs once
 *   older than the overlap horizon plus a margin; kept for the skill log, which has no dates to
 *   filter on and must recognise what it has seen.
 * - `events`: the outbox and journal. One row per ingested entry, its CloudEvent JSON in `payload`,
 *   `seq` giving the ingestion order that every sink follows per object. A rowid table: payloads
 *   are too large for WITHOUT ROWID to pay off.
 * - `journal_heads`: per tenant the highest `seq` ever assigned: a tenant's positions are drawn
 *   from it, so a pruned position is never handed out again.
 * - `sinks`: sinks known to this store; `active` ones receive a `deliveries` row for each new event.
 * - `deliveries`: per (sink, event) progress: state pending | delivered | filtered | dead, attempts,
 *   the next attempt time, the last error, and the destination's last status and a truncated
 *   response body for dead letters. Retry state lives here so it survives restarts.
 * - `sink_state`: per-sink connection and circuit state, why a sink was disabled (410 Gone, the
 *   give-up rule) and `failing_since`, when its destination's current run of endpoint-level
 *   failures began (null while it delivers): shown by `changefeed status`, and read back on
 *   start so a restart neither re-enables a disabled sink nor resets the give-up clock.
 * - `meta`: small named values, such as when discovery last completed.
 * - `rate_estimates`: per watched log, the scheduler's learned change rate (decayed counts of
 *   events and edit sessions, observed hours, the newest change's performedAt), the average
 *   requests per poll, and the planned rate and next poll time that `changefeed status` shows.
 *   Kept so a restart keeps what was learned.
 * - `quarantine`: entries the service sent that cannot become events (no id, an unparseable
 *   performedAt, larger than api.maxEntryBytes), with their raw JSON, log and reason for
 *   `changefeed quarantine list`. Keyed by a fingerprint of the raw JSON, so a page read again does
 *   not record them twice.
 * - `tenant_records`: which tenant owns each API key and the text of each tenant file as it last
 *   validated, from which the tenants are decided (docs/tenants.md); `missing_since` is when a
 *   read first missed the tenant's file, which is forgotten only after `tenants.forgetAfterSeconds`
 *   of that. The same as PostgreSQL's `changefeed_tenant_records`.
 */
export const BASELINE = `
  CREATE TABLE watched_logs (
    tenant TEXT NOT NULL,
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
    first_poll_by INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, log, object_id)
  ) WITHOUT ROWID;

  CREATE TABLE seen_entries (
    tenant TEXT NOT NULL,
    log TEXT NOT NULL,
    object_id TEXT NOT NULL,
    entry_id TEXT NOT NULL,
    performed_at INTEGER,
    seen_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, log, object_id, entry_id)
  ) WITHOUT ROWID;

  CREATE TABLE events (
    tenant TEXT NOT NULL,
    seq INTEGER NOT NULL,
    event_id TEXT NOT NULL,
    log TEXT NOT NULL,
    object_id TEXT NOT NULL,
    type TEXT NOT NULL,
    performed_at INTEGER,
    ingested_at INTEGER NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (tenant, seq),
    UNIQUE (tenant, event_id)
  );
  CREATE INDEX events_by_ingested_at ON events (tenant, ingested_at);

  CREATE TABLE journal_heads (
    tenant TEXT PRIMARY KEY,
    head INTEGER NOT NULL
  ) WITHOUT ROWID;

  CREATE TABLE sinks (
    tenant TEXT NOT NULL,
    name TEXT NOT NULL,
    type TEXT NOT NULL,
    active INTEGER NOT NULL,
    registered_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, name)
  ) WITHOUT ROWID;

  CREATE TABLE deliveries (
    tenant TEXT NOT NULL,
    sink TEXT NOT NULL,
    seq INTEGER NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending',
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL DEFAULT 0,
    first_attempt_at INTEGER,
    last_error TEXT,
    updated_at INTEGER,
    last_status INTEGER,
    last_response TEXT,
    PRIMARY KEY (tenant, sink, seq),
    FOREIGN KEY (tenant, seq) REFERENCES events (tenant, seq) ON DELETE CASCADE
  ) WITHOUT ROWID;
  CREATE INDEX deliveries_by_state ON deliveries (tenant, sink, state, seq);
  CREATE INDEX deliveries_by_seq ON deliveries (tenant, seq);
  CREATE INDEX deliveries_dead ON deliveries (tenant, sink) WHERE state = 'dead';

  CREATE TABLE sink_state (
    tenant TEXT NOT NULL,
    sink TEXT NOT NULL,
    connected INTEGER NOT NULL DEFAULT 0,
    paused_until INTEGER NOT NULL DEFAULT 0,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    last_error_at INTEGER,
    last_delivery_at INTEGER,
    circuit TEXT NOT NULL DEFAULT 'closed',
    disabled_reason TEXT,
    failing_since INTEGER,
    PRIMARY KEY (tenant, sink)
  ) WITHOUT ROWID;

  CREATE TABLE meta (
    tenant TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (tenant, key)
  ) WITHOUT ROWID;

  CREATE TABLE rate_estimates (
    tenant TEXT NOT NULL,
    log TEXT NOT NULL,
    object_id TEXT NOT NULL,
    events REAL NOT NULL DEFAULT 0,
    hours REAL NOT NULL DEFAULT 0,
    updated_at INTEGER,
    poll_cost REAL NOT NULL DEFAULT 1,
    planned_rate REAL,
    next_poll_at INTEGER,
    sessions REAL NOT NULL DEFAULT 0,
    last_event_at INTEGER,
    PRIMARY KEY (tenant, log, object_id)
  ) WITHOUT ROWID;

  CREATE TABLE quarantine (
    tenant TEXT NOT NULL,
    log TEXT NOT NULL,
    object_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    entry_id TEXT,
    reason TEXT NOT NULL,
    raw TEXT NOT NULL,
    raw_bytes INTEGER NOT NULL,
    request_id TEXT,
    first_seen_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, log, object_id, fingerprint)
  ) WITHOUT ROWID;
  CREATE INDEX quarantine_by_first_seen ON quarantine (tenant, first_seen_at);

  CREATE TABLE tenant_records (
    tenant TEXT PRIMARY KEY,
    key_fingerprint TEXT NOT NULL UNIQUE,
    file_text TEXT NOT NULL,
    recorded_at INTEGER NOT NULL,
    missing_since INTEGER
  ) WITHOUT ROWID;
`;

/** The migrations after the baseline: `MIGRATIONS[i]` brings a store to version 101 + i. */
export const MIGRATIONS: readonly string[] = [];

/**
 * The tables of this build's schema (the baseline and every migration), which opening an existing
 * store checks are there; test/unit/sqliteStoreFile.test.ts checks a new store has exactly these.
 */
export const TABLES: readonly string[] = [
  'watched_logs',
  'seen_entries',
  'events',
  'journal_heads',
  'sinks',
  'deliveries',
  'sink_state',
  'meta',
  'rate_estimates',
  'quarantine',
  'tenant_records',
];
