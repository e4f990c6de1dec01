import {
  CLUSTER_KEYS_SQL,
  INSTANCE_ADVERTISE_SQL,
  LEASE_KEY_SQL,
  LEASE_SCHEMA_SQL,
  TENANT_RECORDS_MISSING_SQL,
  TENANT_RECORDS_SCHEMA_SQL,
} from '../../cluster/leaseSchema.js';

/**
 * The PostgreSQL store schema, as numbered migrations applied in order (migrate.ts) and recorded
 * in `schema_migrations`. Never edit a released migration; append a new one.
 *
 * The tables and their meaning are those of the SQLite store (../sqlite/migrations.ts), with
 * these differences:
 * - Every table starts with `tenant`, which leads every primary key and index: the tenants of a
 *   deployment share one schema, and every query names its tenant (SQLite's too since its
 *   migration 6).
 * - `events.seq` is one identity shared by the tenants: a tenant's positions grow but are not
 *   contiguous (SQLite, with one writer, numbers each tenant's from 1). `journal_heads` keeps per
 *   tenant the highest seq ever assigned, as SQLite's does, so the head never goes back when the
 *   journal is pruned; its row is also the lock that orders the ingests of one tenant (see
 *   PostgresChangefeedStore.ingest).
 * - Times are the callers' millisecond numbers as `double precision`, which holds any JS number
 *   exactly, fractions of a jittered retry time included, as SQLite's dynamic typing does.
 * - Flags are `boolean`; payloads and raw entries are `text`, never jsonb, so the feed returns
 *   the exact bytes it stored.
 * - `changefeed_instances` and `changefeed_leases` are the replicas of a deployment and the lease
 *   each tenant is held under (docs/scaling.md); the fence of every write transaction reads them.
 *
 * Migration 2 adds `watched_logs.first_poll_by`, as SQLite's migration 7 does. Its default (0: due
 * at once) is for the replicas of the previous version still running in a rolling update, whose
 * inserts do not name it.
 *
 * Migration 3 adds `changefeed_tenant_records`: which tenant owns each API key and the last valid
 * text of each tenant file, from which every replica decides the same tenants (docs/tenants.md).
 *
 * Migration 4 adds `changefeed_instances.advertise_url`: where each replica's feed is reached, so
 * a replica not holding a tenant redirects its feed clients to the one that does (docs/scaling.md).
 *
 * Migration 5 adds `changefeed_tenant_records.missing_since` (a record outlives its file by
 * `tenants.forgetAfterSeconds`) and `changefeed_leases.key_fingerprint` (one key, one leased tenant
 * in the cluster); see leaseSchema.ts. Both are NULL on the rows of earlier versions, and the
 * replicas of the previous version still running in a rolling update never name them.
 *
 * Migration 6 adds `changefeed_cluster_keys`, whose `feed-ticket` row signs the tickets of feed
 * redirects (leaseSchema.ts). Replicas of the previous version redirect without a ticket, as before.
 */
export const MIGRATIONS: readonly string[] = [
  `
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

  ${LEASE_SCHEMA_SQL}
  `,
  `
  ALTER TABLE watched_logs ADD COLUMN first_poll_by DOUBLE PRECISION NOT NULL DEFAULT 0;
  UPDATE watched_logs SET first_poll_by = created_at;
  `,
  `
  ${TENANT_RECORDS_SCHEMA_SQL}
  `,
  `
  ${INSTANCE_ADVERTISE_SQL}
  `,
  `
  ${TENANT_RECORDS_MISSING_SQL}
  ${LEASE_KEY_SQL}
  `,
  `
  ${CLUSTER_KEYS_SQL}
  `,
];
