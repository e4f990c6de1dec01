import type { LogKind } from '../../logs.js';
import type { WatchedLogStore } from '../changefeedStore.js';
import { fromRow, WATCHED_LOG_COLUMNS, type RowOf } from '../storedRows.js';
import type { WatchedLog, WatchRegistration, WatchStatus, SortOrder } from '../storeRecords.js';
import type { Query, TenantDb } from './tenantDb.js';
import { storableText } from './storableText.js';

export class PostgresWatchedLogs implements WatchedLogStore {
  constructor(private readonly db: TenantDb) {}

  async get(log: LogKind, objectId: string): Promise<WatchedLog | undefined> {
    const rows = await this.db.read<RowOf<WatchedLog>>(
      `SELECT ${WATCHED_LOG_COLUMNS} FROM watched_logs WHERE tenant = $1 AND log = $2 AND object_id = $3`,
      [this.db.tenant, log, objectId],
    );
    return rows[0] ? fromRow(rows[0]) : undefined;
  }

  async list(): Promise<WatchedLog[]> {
    // COLLATE "C": byte order, as SQLite sorts text, whatever the database's locale.
    const rows = await this.db.read<RowOf<WatchedLog>>(
      `SELECT ${WATCHED_LOG_COLUMNS} FROM watched_logs WHERE tenant = $1 ORDER BY log COLLATE "C", object_id COLLATE "C"`,
      [this.db.tenant],
    );
    return rows.map(fromRow<WatchedLog>);
  }

  async register(args: WatchRegistration): Promise<boolean> {
    const windowed = args.log !== 'skill';
    const result = await this.db.writeOne(
      `INSERT INTO watched_logs (tenant, log, object_id, origin, coverage_start, window_end, created_at, next_poll_at,
         first_poll_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8)
       ON CONFLICT (tenant, log, object_id) DO NOTHING`,
      [
        this.db.tenant,
        args.log,
        args.objectId,
        args.origin,
        args.coverageStart,
        windowed ? args.coverageStart : null,
        args.now,
        args.firstPollBy ?? args.now,
      ],
    );
    return result.rowCount === 1;
  }

  /** Part of the ingest transaction: records a completely read window or full read. */
  async advance(
    query: Query,
    args: { log: LogKind; objectId: string; windowEnd: number; ingested: number; now: number },
  ): Promise<void> {
    await query(
      `UPDATE watched_logs SET window_end = $4, last_poll_at = $5, last_success_at = $5, last_error = NULL,
         consecutive_failures = 0, entries_ingested = entries_ingested + $6
       WHERE tenant = $1 AND log = $2 AND object_id = $3`,
      [this.db.tenant, args.log, args.objectId, args.windowEnd, args.now, args.ingested],
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
