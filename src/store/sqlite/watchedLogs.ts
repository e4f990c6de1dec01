import type { LogKind } from '../../logs.js';
import type { WatchedLogStore } from '../changefeedStore.js';
import { WATCHED_LOG_COLUMNS, watchedLogFromRow, type RowOf } from '../storedRows.js';
import type { LogKindCoverage, WatchedLog, WatchRegistration, WatchStatus, SortOrder } from '../storeRecords.js';
import type { TenantConnection } from './tenantConnection.js';
import { TurnBatchedRead } from './turnBatchedRead.js';

const GET = `SELECT ${WATCHED_LOG_COLUMNS} FROM watched_logs WHERE tenant = ? AND log = ? AND object_id = ?`;
const LIST = `SELECT ${WATCHED_LOG_COLUMNS} FROM watched_logs WHERE tenant = ? ORDER BY log, object_id`;
// MIN skips the NULLs: a log not active, or without a cursor yet (a skill before its first full read).
const COVERAGE = `SELECT tenant, log, SUM(status <> 'active' OR consecutive_failures > 0) AS gaps,
    MIN(CASE WHEN status = 'active' THEN window_end END) AS oldestActiveWindowEnd
  FROM watched_logs WHERE tenant IN (SELECT value FROM json_each(?)) GROUP BY tenant, log ORDER BY tenant, log`;

/** Every asking tenant's coverage, in one statement (TurnBatchedRead): a scrape asks every tenant at once. */
export function watchedLogCoverageRead(): TurnBatchedRead<LogKindCoverage & { tenant: string }> {
  return new TurnBatchedRead(COVERAGE);
}

const INSERT = `INSERT INTO watched_logs (tenant, log, object_id, origin, coverage_start, window_end, created_at, next_poll_at,
    first_poll_by)
  VALUES (@tenant, @log, @objectId, @origin, @coverageStart, @windowEnd, @now, @now, @firstPollBy)
  ON CONFLICT (tenant, log, object_id) DO NOTHING`;
const ADVANCE = `UPDATE watched_logs SET window_end = @windowEnd, last_poll_at = @now, last_success_at = @now,
    last_error = NULL, consecutive_failures = 0, entries_ingested = entries_ingested + @ingested,
    sort_order = COALESCE(@sortOrder, sort_order)
  WHERE tenant = @tenant AND log = @log AND object_id = @objectId`;
const FAILURE = `UPDATE watched_logs SET last_poll_at = @now, last_error = @error, consecutive_failures = consecutive_failures + 1
  WHERE tenant = @tenant AND log = @log AND object_id = @objectId`;
const STATUS = `UPDATE watched_logs SET status = @status, status_reason = @reason
  WHERE tenant = @tenant AND log = @log AND object_id = @objectId`;
const SORT_ORDER = 'UPDATE watched_logs SET sort_order = ? WHERE tenant = ? AND log = ? AND object_id = ?';

export class WatchedLogs implements WatchedLogStore {
  constructor(
    private readonly conn: TenantConnection,
    private readonly coverageRead: ReturnType<typeof watchedLogCoverageRead>,
  ) {}

  async get(log: LogKind, objectId: string): Promise<WatchedLog | undefined> {
    const row = this.conn
      .statement<[string, string, string], RowOf<WatchedLog>>(GET)
      .get(this.conn.tenant, log, objectId);
    return row ? watchedLogFromRow(row) : undefined;
  }

  async list(): Promise<WatchedLog[]> {
    return this.conn.statement<[string], RowOf<WatchedLog>>(LIST).all(this.conn.tenant).map(watchedLogFromRow);
  }

  async coverage(): Promise<LogKindCoverage[]> {
    const rows = await this.coverageRead.rowsOf(this.conn);
    return rows.map(({ log, gaps, oldestActiveWindowEnd }) => ({ log, gaps, oldestActiveWindowEnd }));
  }

  async registerAll(registrations: readonly WatchRegistration[]): Promise<number> {
    if (registrations.length === 0) return 0;
    return this.conn.transaction(() => {
      const insert = this.conn.statement<object>(INSERT);
      let added = 0;
      for (const r of registrations) {
        added += insert.run({
          tenant: this.conn.tenant,
          log: r.log,
          objectId: r.objectId,
          origin: r.origin,
          coverageStart: r.coverageStart,
          windowEnd: r.log === 'skill' ? null : r.coverageStart,
          now: r.now,
          firstPollBy: r.firstPollBy ?? r.now,
        }).changes;
      }
      return added;
    });
  }

  /** Part of the ingest transaction: records a completely read window or full read, and the sort order the read detected. */
  advance(args: {
    log: LogKind;
    objectId: string;
    windowEnd: number;
    ingested: number;
    now: number;
    sortOrder?: SortOrder;
  }): void {
    this.conn.statement<object>(ADVANCE).run({ ...args, sortOrder: args.sortOrder ?? null, tenant: this.conn.tenant });
  }

  async recordFailure(log: LogKind, objectId: string, error: string, now: number): Promise<void> {
    this.conn.statement<object>(FAILURE).run({ tenant: this.conn.tenant, log, objectId, error, now });
  }

  async setStatus(log: LogKind, objectId: string, status: WatchStatus, reason: string | null): Promise<void> {
    this.conn.statement<object>(STATUS).run({ tenant: this.conn.tenant, log, objectId, status, reason });
  }

  async setSortOrder(log: LogKind, objectId: string, order: SortOrder): Promise<void> {
    this.conn.statement(SORT_ORDER).run(order, this.conn.tenant, log, objectId);
  }
}
