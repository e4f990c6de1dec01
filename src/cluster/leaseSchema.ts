/**
 * The tables through which replicas sharing one PostgreSQL store divide the tenants
 * (docs/leases.md) and agree on them (docs/tenants.md), as of release 1.0.0: part of the
 * PostgreSQL store's baseline (store/postgres/migrations.ts). Change them only by a new migration
 * there; test/store/schemaBaseline.test.ts fails on a change made here alone.
 *
 * Every time in them is written by the database (`clock_timestamp()`), never by a replica: the
 * replicas' clocks may disagree by seconds, the database's is the one clock they all share.
 *
 * `changefeed_instances`: one row per replica, its `heartbeat_at` refreshed every renewal round.
 *   A replica whose heartbeat is older than the lease duration is not live: the others stop
 *   counting it when they divide the tenants. `advertise_url` and `health_url` are where its feed
 *   and its health server are reached (`cluster.advertiseUrl`, `cluster.advertiseHealthUrl`),
 *   written with every heartbeat, so a replica not holding a tenant redirects its feed clients to
 *   the one that does and `status` asks the holder's health server (docs/scaling.md, "Any replica
 *   answers for any tenant"). NULL when unset: requests for its tenants elsewhere answer 503.
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
 *   - `key_fingerprint`: the sha256 of the API key the tenant polls with, written by every
 *     acquisition and brought up to date by renewals (a tenant file given another key). An
 *     acquisition is refused while another tenant's valid lease holds the same fingerprint
 *     (LeaseTable.acquireMany), so one key is polled by one tenant at a time in the whole cluster,
 *     even while replicas read the tenants directory at different times. Not unique and in no
 *     index: an expired lease must not block the key.
 *   `tenant` must stay its only key column (no unique index on another): a renewal then takes
 *   FOR NO KEY UPDATE and never waits for the fenced writes' FOR KEY SHARE (docs/leases.md).
 *
 * `changefeed_cluster_keys`: secrets the replicas of one store share. Its one row, `feed-ticket`,
 *   is the HMAC key of the tickets a replica appends to a feed redirect (src/feed/feedTicket.ts),
 *   so the holder can check a ticket another replica signed. The first replica to start inserts
 *   32 random bytes; the others read them (FeedTicketKey).
 *
 * `changefeed_tenant_records`: one row per tenant whose file validated once and is still there
 *   (or whose key a renamed file still holds), from which every replica decides the same tenants
 *   (docs/tenants.md, "How replicas agree on the tenants"):
 *   - `key_fingerprint`: sha256 of the API key it owns, unique: a key has one owner in the cluster.
 *   - `file_text`: the tenant file's text as it last validated, so a replica started after the file
 *     turned invalid runs the tenant on it too. Kept as written: `${VAR}` references unresolved, an
 *     `api.apiKeyFile` by its path; an inline `api.apiKey` is in it as in the file.
 *   - `recorded_at`: when it last changed, for whoever investigates.
 *   - `missing_since`: set by the first read that misses the tenant's file and cleared by a read
 *     that finds it. The record is deleted only once it is older than `tenants.forgetAfterSeconds`
 *     (settleTenants), so a replica that reads an empty or wrongly mounted directory frees no key
 *     and loses no last valid text.
 *   Written only under the transaction-scoped advisory lock of TenantRecordTable.settle.
 */
export const CLUSTER_SCHEMA_SQL = `
CREATE TABLE changefeed_instances (
  instance_id text PRIMARY KEY,
  started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  heartbeat_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  advertise_url text NULL,
  health_url text NULL
);
CREATE TABLE changefeed_leases (
  tenant text PRIMARY KEY,
  holder text NULL,
  epoch bigint NOT NULL DEFAULT 0 CHECK (epoch >= 0),
  expires_at timestamptz NOT NULL DEFAULT '-infinity',
  acquired_at timestamptz NULL,
  renewed_at timestamptz NULL,
  released_at timestamptz NULL,
  key_fingerprint text NULL
);
CREATE INDEX changefeed_leases_holder ON changefeed_leases (holder);
CREATE TABLE changefeed_cluster_keys (
  name text PRIMARY KEY,
  secret bytea NOT NULL CHECK (octet_length(secret) >= 32),
  created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE TABLE changefeed_tenant_records (
  tenant text PRIMARY KEY,
  key_fingerprint text NOT NULL UNIQUE,
  file_text text NOT NULL,
  recorded_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  missing_since timestamptz NULL
);
`;
