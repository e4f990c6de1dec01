import type { LogKind } from '../../logs.js';
import type { WatchedLogStore } from '../changefeedStore.js';
import { WATCHED_LOG_COLUMNS, watchedLogFromRow, type RowOf } from '../storedRows.js';
import type { LogKindCoverage, WatchedLog, WatchRegistration, WatchStatus, SortOrder } from '../storeRecords.js';
import type { AdvanceBatch } from './advanceBatch.js';
import { BatchedRead } from './batchedRead.js';
import type { Query, TenantDb } from './tenantDb.js';
import { storableText } from './storableText.js';

type TenantWatchedLogRow = RowOf<WatchedLog> & { tenant: string };

/** Every asking tenant's watched logs, in one statement (BatchedRead). */
export function watchedLogListRead(): BatchedRead<TenantWatchedLogRow> {
  return new BatchedRead<TenantWatchedLogRow>(
    (tenants) => ({
      // COLLATE "C": byte order, as SQLite sorts text, whatever the database's locale.
      sql: `SELECT tenant, ${WATCHED_LOG_COLUMNS} FROM watched_logs WHERE tenant = ANY($1::text[])
            ORDER BY tenant, log COLLATE "C", object_id COLLATE "C"`,
      params: [tenants],
    }),
    (row) => row.tenant,
  );
}

type TenantCoverageRow = { tenant: string; log: LogKind; gaps: string; oldest: number | null };

/**
 * Every asking tenant's coverage by kind of log, in one statement (BatchedRead): a scrape asks
 * every tenant at once, and is answered three rows a tenant instead of all its watched logs.
 */
export function watchedLogCoverageRead(): BatchedRead<TenantCoverageRow> {
  return new BatchedRead<TenantCoverageRow>(
    (tenants) => ({
      sql: `SELECT tenant, log, COUNT(*) FILTER (WHERE status <> 'active' OR consecutive_failures > 0) AS gaps,
              MIN(window_end) FILTER (WHERE status = 'active') AS oldest
            FROM watched_logs WHERE tenant = ANY($1::text[])
            GROUP BY tenant, log ORDER BY tenant, log COLLATE "C"`,
      params: [tenants],
    }),
    (row) => row.tenant,
  );
}

export class PostgresWatchedLogs implements WatchedLogStore {
  constructor(
    private readonly db: TenantDb,
    private readonly listRead: BatchedRead<TenantWatchedLogRow>,
    private readonly coverageRead: BatchedRead<TenantCoverageRow>,
    private readonly advances: AdvanceBatch,
  ) {}

  async get(log: LogKind, objectId: string): Promise<WatchedLog | undefined> {
    const rows = await this.db.read<RowOf<WatchedLog>>(
      `SELECT ${WATCHED_LOG_COLUMNS} FROM watched_logs WHERE tenant = $1 AND log = $2 AND object_id = $3`,
      [this.db.tenant, log, objectId],
    );
    return rows[0] ? watchedLogFromRow(rows[0]) : undefined;
  }

  /** Read with the lists other tenants ask for in the same turn (a scrape asks every tenant at once). */
  async list(): Promise<WatchedLog[]> {
    const rows = await this.listRead.rowsOf(this.db, this.db.tenant);
    return rows.map((row) => watchedLogFromRow(row as RowOf<WatchedLog>));
  }

  /** Read with the other tenants asking in the same turn, as `list` is. */
  async coverage(): Promise<LogKindCoverage[]> {
    const rows = await this.coverageRead.rowsOf(this.db, this.db.tenant);
    // COUNT is a bigint, which node-postgres gives as text.
    return rows.map((row) => ({ log: row.log, gaps: Number(row.gaps), oldestActiveWindowEnd: row.oldest }));
  }

  /**
   * One statement, one fenced transaction, for a whole list: a discovery of 25 logs is one write,
   * not 25. An id holding a NUL is stored as storableText makes it: kept as it came, it would fail
   * the statement, and so every discovery of the tenant; its log answers 404 and is set aside as
   * gone.
   */
  async registerAll(registrations: readonly WatchRegistration[]): Promise<number> {
    if (registrations.length === 0) return 0;
    const result = await this.db.writeOne(
      `INSERT INTO watched_logs (tenant, log, object_id, origin, coverage_start, window_end, created_at, next_poll_at,
         first_poll_by)
       SELECT $1, u.log, u.object_id, u.origin, u.coverage_start, CASE WHEN u.log = 'skill' THEN NULL ELSE u.coverage_start END,
         u.now, u.now, u.first_poll_by
       FROM unnest($2::text[], $3::text[], $4::text[], $5::float8[], $6::float8[], $7::float8[]) WITH ORDINALITY
         AS u (log, object_id, origin, coverage_start, now, first_poll_by, ord)
       ORDER BY u.ord
       ON CONFLICT (tenant, log, object_id) DO NOTHING`,
      [
        this.db.tenant,
        registrations.map((r) => r.log),
        registrations.map((r) => storableText(r.objectId)),
        registrations.map((r) => r.origin),
        registrations.map((r) => r.coverageStart),
        registrations.map((r) => r.now),
        registrations.map((r) => r.firstPollBy ?? r.now),
      ],
    );
    return result.rowCount ?? 0;
  }

  /**
   * Part of the ingest transaction: records a completely read window or full read (and the sort
   * order the read detected, if given) and, with `pruneSeenBefore`, forgets the log's seen ids
   * older than it (an undated one aged by when it was seen), in one statement. A poll that found
   * nothing new writes advanceAlone instead.
   */
  advance(
    query: Query,
    args: {
      log: LogKind;
      objectId: string;
      windowEnd: number;
      ingested: number;
      now: number;
      pruneSeenBefore?: number;
      sortOrder?: SortOrder;
    },
  ): void {
    query.later(
      `WITH pruned AS (
         DELETE FROM seen_entries WHERE $7::float8 IS NOT NULL
           AND tenant = $1 AND log = $2 AND object_id = $3 AND COALESCE(performed_at, seen_at) < $7
       )
       UPDATE watched_logs SET window_end = $4, last_poll_at = $5, last_success_at = $5, last_error = NULL,
         consecutive_failures = 0, entries_ingested = entries_ingested + $6, sort_order = COALESCE($8, sort_order)
       WHERE tenant = $1 AND log = $2 AND object_id = $3`,
      [
        this.db.tenant,
        args.log,
        storableText(args.objectId),
        args.windowEnd,
        args.now,
        args.ingested,
        args.pruneSeenBefore ?? null,
        args.sortOrder ?? null,
      ],
    );
  }

  /**
   * `advance` for a read that found nothing (most polls): under a lease, in the backend's
   * AdvanceBatch with the other tenants' (one statement for many, each checking its own lease);
   * else, as with writes waiting to ride, a write of its own that checks the tenant's lease in its
   * one statement (TenantDb.writeFencedAlone): one round trip, not three.
   */
  async advanceAlone(args: {
    log: LogKind;
    objectId: string;
    windowEnd: number;
    now: number;
    pruneSeenBefore?: number;
    sortOrder?: SortOrder;
  }): Promise<void> {
    if (await this.db.advanceInBatch(this.advances, args)) return;
    await this.db.writeFencedAlone(
      (lease) => `WITH ${lease},
       pruned AS (
         DELETE FROM seen_entries WHERE EXISTS (SELECT FROM lease) AND $6::float8 IS NOT NULL
           AND tenant = $1 AND log = $2 AND object_id = $3 AND COALESCE(performed_at, seen_at) < $6
       ),
       advanced AS (
         UPDATE watched_logs SET window_end = $4, last_poll_at = $5, last_success_at = $5, last_error = NULL,
           consecutive_failures = 0, sort_order = COALESCE($7, sort_order)
         WHERE EXISTS (SELECT FROM lease) AND tenant = $1 AND log = $2 AND object_id = $3
       )
       SELECT EXISTS (SELECT FROM lease) AS held`,
      [
        this.db.tenant,
        args.log,
        storableText(args.objectId),
        args.windowEnd,
        args.now,
        args.pruneSeenBefore ?? null,
        args.sortOrder ?? null,
      ],
    );
  }

  async recordFailure(log: LogKind, objectId: string, error: string, now: number): Promise<void> {
    await this.db.writeOne(
      `UPDATE watched_logs SET last_poll_at = $4, last_error = $5, consecutive_failures = consecutive_failures + 1
       WHERE tenant = $1 AND log = $2 AND object_id = $3`,
      [this.db.tenant, log, objectId, now, storableText(error)],
    );
  }

  async setStatus(log: LogKind, objectId: string, status: WatchStatus, reason: string | null): Promise<void> {
    await this.db.writeOne(
      'UPDATE watched_logs SET status = $4, status_reason = $5 WHERE tenant = $1 AND log = $2 AND object_id = $3',
      [this.db.tenant, log, objectId, status, storableText(reason)],
    );
  }

  async setSortOrder(log: LogKind, objectId: string, order: SortOrder): Promise<void> {
    await this.db.writeOne(
      'UPDATE watched_logs SET sort_order = $4 WHERE tenant = $1 AND log = $2 AND object_id = $3',
      [this.db.tenant, log, objectId, order],
    );
  }
}
