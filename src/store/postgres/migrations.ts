import { CLUSTER_SCHEMA_SQL } from '../../cluster/leaseSchema.js';

/**
 * The PostgreSQL store's schema: `BASELINE`, the schema of release 1.0.0 (version 100,
 * ../schemaVersion.ts), created whole in a new schema, then `MIGRATIONS`, versions 101, 102, ...,
 * applied in order by migrate.ts and recorded in `schema_migrations`. Never edit the baseline or
 * a released migration: append a migration, and test/store/schemaBaseline.test.ts checks that a
 * 1.0.0 store migrated to this build's schema equals a new one (docs/operations.md, "Schema
 * changes"). A migration runs while replicas of the previous release may still be writing (a
 * rolling update): a column they do not name needs a default.
 *
 * The tables and their meaning are those of the SQLite store (../sqlite/migrations.ts), with
 * these differences:
 * - `events.seq` is one identity shared by the tenants: a tenant's positions grow but are not
 *   contiguous (SQLite, with one writer, numbers each tenant's from 1). `journal_heads` keeps per
 *   tenant the highest seq ever assigned, as SQLite's does, so the head never goes back when the
 *   journal is pruned; its row is also the lock that orders the ingests of one tenant (see
 *   PostgresChangefeedStore.ingest).
 * - Times are the callers' millisecond numbers as `double precision`, which holds any JS number
 *   exactly, fractions of a jittered retry time included, as SQLite's dynamic typing does.
 * - Flags are `boolean`; payloads and raw entries are `text`, never jsonb, so the feed returns
 *   the exact bytes it stored.
 * - The tenant records are `changefeed_tenant_records`, beside the tables through which replicas
 *   divide the tenants (CLUSTER_SCHEMA_SQL, docs/scaling.md); the fence of every write
 *   transaction reads the leases.
 */
export const BASELINE = `
  CREATE TABLE watched_logs (
    tenant TEXT NOT NULL,
    log TEXT NOT NULL,
    object_id TEXT NOT NULL,
    origin TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'active',
    status_reason TEXT,
    coverage_start DOUBLE PRECISION,
    window_end DOUBLE PRECISION,
    sort_order TEXT,
    last_poll_at DOUBLE PRECISION,
    last_success_at DOUBLE PRECISION,
    last_error TEXT,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    next_poll_at DOUBLE PRECISION NOT NULL DEFAULT 0,
    entries_ingested BIGINT NOT NULL DEFAULT 0,
    created_at DOUBLE PRECISION NOT NULL,
    first_poll_by DOUBLE PRECISION NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, log, object_id)
  );

  CREATE TABLE seen_entries (
    tenant TEXT NOT NULL,
    log TEXT NOT NULL,
    object_id TEXT NOT NULL,
    entry_id TEXT NOT NULL,
    performed_at DOUBLE PRECISION,
    seen_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (tenant, log, object_id, entry_id)
  );

  CREATE TABLE events (
    tenant TEXT NOT NULL,
    seq BIGINT GENERATED ALWAYS AS IDENTITY,
    event_id TEXT NOT NULL,
    log TEXT NOT NULL,
    object_id TEXT NOT NULL,
    type TEXT NOT NULL,
    performed_at DOUBLE PRECISION,
    ingested_at DOUBLE PRECISION NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (tenant, seq),
    UNIQUE (tenant, event_id)
  );
  CREATE INDEX events_by_ingested_at ON events (tenant, ingested_at);

  CREATE TABLE journal_heads (
    tenant TEXT PRIMARY KEY,
    head BIGINT NOT NULL
  );

  CREATE TABLE sinks (
    tenant TEXT NOT NULL,
    name TEXT NOT NULL,
    type TEXT NOT NULL,
    active BOOLEAN NOT NULL,
    registered_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (tenant, name)
  );

  CREATE TABLE deliveries (
    tenant TEXT NOT NULL,
    sink TEXT NOT NULL,
    seq BIGINT NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending',
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at DOUBLE PRECISION NOT NULL DEFAULT 0,
    first_attempt_at DOUBLE PRECISION,
    last_error TEXT,
    last_status INTEGER,
    last_response TEXT,
    updated_at DOUBLE PRECISION,
    PRIMARY KEY (tenant, sink, seq),
    FOREIGN KEY (tenant, seq) REFERENCES events (tenant, seq) ON DELETE CASCADE
  );
  CREATE INDEX deliveries_by_state ON deliveries (tenant, sink, state, seq);
  CREATE INDEX deliveries_by_seq ON deliveries (tenant, seq);
  CREATE INDEX deliveries_dead ON deliveries (tenant, sink) WHERE state = 'dead';

  CREATE TABLE sink_state (
    tenant TEXT NOT NULL,
    sink TEXT NOT NULL,
    connected BOOLEAN NOT NULL DEFAULT false,
    paused_until DOUBLE PRECISION NOT NULL DEFAULT 0,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    last_error_at DOUBLE PRECISION,
    last_delivery_at DOUBLE PRECISION,
    circuit TEXT NOT NULL DEFAULT 'closed',
    disabled_reason TEXT,
    failing_since DOUBLE PRECISION,
    PRIMARY KEY (tenant, sink)
  );

  CREATE TABLE meta (
    tenant TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (tenant, key)
  );

  CREATE TABLE rate_estimates (
    tenant TEXT NOT NULL,
    log TEXT NOT NULL,
    object_id TEXT NOT NULL,
    events DOUBLE PRECISION NOT NULL DEFAULT 0,
    hours DOUBLE PRECISION NOT NULL DEFAULT 0,
    sessions DOUBLE PRECISION NOT NULL DEFAULT 0,
    last_event_at DOUBLE PRECISION,
    updated_at DOUBLE PRECISION,
    poll_cost DOUBLE PRECISION NOT NULL DEFAULT 1,
    planned_rate DOUBLE PRECISION,
    next_poll_at DOUBLE PRECISION,
    PRIMARY KEY (tenant, log, object_id)
  );

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
    first_seen_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (tenant, log, object_id, fingerprint)
  );
  CREATE INDEX quarantine_by_first_seen ON quarantine (tenant, first_seen_at);

  ${CLUSTER_SCHEMA_SQL}
`;

/** The migrations after the baseline: `MIGRATIONS[i]` brings a store to version 101 + i. */
export const MIGRATIONS: readonly string[] = [];

/**
 * The tables of this build's schema (the baseline and every migration), which opening an existing
 * store checks are there; test/store/postgresBackend.test.ts checks a new store has exactly these.
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
  'changefeed_instances',
  'changefeed_leases',
  'changefeed_cluster_keys',
  'changefeed_tenant_records',
];
