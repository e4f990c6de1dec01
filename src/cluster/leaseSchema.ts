import type pg from 'pg';

/**
 * The tables through which replicas sharing one PostgreSQL store divide the tenants
 * (docs/leases.md). Idempotent, so it can run at every start and inside the store's versioned
 * migrations alike. Part of the PostgreSQL store's migration 1: change it only by a new migration.
 *
 * Every time in them is written by the database (`clock_timestamp()`), never by a replica: the
 * replicas' clocks may disagree by seconds, the database's is the one clock they all share.
 *
 * `changefeed_instances`: one row per replica, its `heartbeat_at` refreshed every renewal round.
 *   A replica whose heartbeat is older than the lease duration is not live: the others stop
 *   counting it when they divide the tenants. `advertise_url` and `health_url`
 *   (INSTANCE_ADVERTISE_SQL) are where its feed and its health server are reached
 *   (`cluster.advertiseUrl`, `cluster.advertiseHealthUrl`), written with every heartbeat; NULL when unset.
 *
 * `changefeed_leases`: one row per tenant ever leased.
 *   - `holder`: the replica holding it, NULL once released.
 *   - `epoch`: incremented by every acquisition, never by a renewal. A write is fenced on
 *     (tenant, holder, epoch), so a replica that lost the lease and got it back cannot finish a
 *     write it began under the old epoch.
 *   - `expires_at`: the lease is valid while `expires_at > clock_timestamp()`; an expired lease is
 *     free to take whatever `holder` says.
 *   - `acquired_at`, `renewed_at`, `released_at`: for `status` and for whoever investigates a
 *     hand-over.
 *   `tenant` must stay its only key column (no unique index on another): a renewal then takes
 *   FOR NO KEY UPDATE and never waits for the fenced writes' FOR KEY SHARE (docs/leases.md).
 */
export const LEASE_SCHEMA_SQL = `
CREATE TABLE IF NOT EXISTS changefeed_instances (
  instance_id text PRIMARY KEY,
  started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  heartbeat_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE TABLE IF NOT EXISTS changefeed_leases (
  tenant text PRIMARY KEY,
  holder text NULL,
  epoch bigint NOT NULL DEFAULT 0 CHECK (epoch >= 0),
  expires_at timestamptz NOT NULL DEFAULT '-infinity',
  acquired_at timestamptz NULL,
  renewed_at timestamptz NULL,
  released_at timestamptz NULL
);
CREATE INDEX IF NOT EXISTS changefeed_leases_holder ON changefeed_leases (holder);
`;

/**
 * The columns through which a replica that does not hold a tenant sends its feed clients to the
 * holder, and `status` asks the holder's health server (docs/scaling.md, "Any replica answers for any tenant"); the PostgreSQL store's
 * migration 4. Nullable: a replica without `cluster.advertiseUrl`, and one of an older build
 * during a rolling upgrade, writes none, and requests for its tenants elsewhere answer 503.
 */
export const INSTANCE_ADVERTISE_SQL = `
ALTER TABLE changefeed_instances ADD COLUMN IF NOT EXISTS advertise_url text NULL;
ALTER TABLE changefeed_instances ADD COLUMN IF NOT EXISTS health_url text NULL;
`;

/**
 * The PostgreSQL store's migration 5 on the lease table: `changefeed_leases.key_fingerprint`, the
 * sha256 of the API key the tenant polls with, written by every acquisition (never by a renewal).
 * An acquisition is refused while another tenant's valid lease holds the same fingerprint
 * (LeaseTable.acquire), so one key is polled by one tenant at a time in the whole cluster, even
 * while replicas read the tenants directory at different times. Not unique and in no index: a
 * unique index would make it a key column, and renewals would then wait for fenced writes; an
 * expired lease must not block the key either. NULL on rows a replica of the previous version
 * acquired.
 */
export const LEASE_KEY_SQL = `
ALTER TABLE changefeed_leases ADD COLUMN IF NOT EXISTS key_fingerprint text NULL;
`;

/**
 * The PostgreSQL store's migration 6: `changefeed_cluster_keys`, secrets the replicas of one store
 * share. Its one row today, `feed-ticket`, is the HMAC key of the tickets a replica appends to a
 * feed redirect (src/feed/feedTicket.ts), so the holder can check a ticket another replica signed.
 * The first replica to start inserts 32 random bytes; the others read them (FeedTicketKey).
 */
export const CLUSTER_KEYS_SQL = `
CREATE TABLE IF NOT EXISTS changefeed_cluster_keys (
  name text PRIMARY KEY,
  secret bytea NOT NULL CHECK (octet_length(secret) >= 32),
  created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
`;

/**
 * Creates the lease tables if they are missing. Two replicas starting together would race in
 * `CREATE TABLE IF NOT EXISTS` (one fails on the catalog's unique index), so the creation is
 * serialised by a transaction-scoped advisory lock.
 */
export async function createLeaseTables(client: pg.ClientBase): Promise<void> {
  await client.query('BEGIN');
  try {
    await client.query("SELECT pg_advisory_xact_lock(hashtext('changefeed_leases'))");
    await client.query(LEASE_SCHEMA_SQL);
    await client.query(INSTANCE_ADVERTISE_SQL);
    await client.query(LEASE_KEY_SQL);
    await client.query(CLUSTER_KEYS_SQL);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

/**
 * The table through which replicas agree on the tenants (docs/tenants.md, "How replicas agree on
 * the tenants"); the PostgreSQL store's migration 3. One row per tenant whose file validated once
 * and is still there (or whose key a renamed file still holds):
 *   - `key_fingerprint`: sha256 of the API key it owns, unique: a key has one owner in the cluster.
 *   - `file_text`: the tenant file's text as it last validated, so a replica started after the file
 *     turned invalid runs the tenant on it too. Kept as written: `${VAR}` references unresolved, an
 *     `api.apiKeyFile` by its path; an inline `api.apiKey` is in it as in the file.
 *   - `recorded_at`: when it last changed, for whoever investigates.
 * Written only under the transaction-scoped advisory lock of TenantRecordTable.settle.
 */
export const TENANT_RECORDS_SCHEMA_SQL = `
CREATE TABLE IF NOT EXISTS changefeed_tenant_records (
  tenant text PRIMARY KEY,
  key_fingerprint text NOT NULL UNIQUE,
  file_text text NOT NULL,
  recorded_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
`;

/**
 * The PostgreSQL store's migration 5 on the tenant records: `missing_since`, set (on the database's
 * clock) by the first read that misses the tenant's file and cleared by a read that finds it. The
 * record is deleted only once it is older than `tenants.forgetAfterSeconds` (settleTenants), so a
 * replica that reads an empty or wrongly mounted directory frees no key and loses no last valid
 * text.
 */
export const TENANT_RECORDS_MISSING_SQL = `
ALTER TABLE changefeed_tenant_records ADD COLUMN IF NOT EXISTS missing_since timestamptz NULL;
`;
