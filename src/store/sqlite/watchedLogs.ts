import type { LogKind } from '../../logs.js';
import type { WatchedLogStore } from '../changefeedStore.js';
import { watchedLogFromRow, type WatchedLogRow } from '../storedRows.js';
import type { WatchedLog, WatchOrigin, WatchStatus, SortOrder } from '../storeRecords.js';
import type { Db } from './database.js';

/** Cursors and status of the watched logs. */
export class WatchedLogs implements WatchedLogStore {
  private readonly getStmt;
  private readonly listStmt;
  private readonly insertStmt;
  private readonly cursorStmt;
  private readonly failureStmt;
  private readonly statusStmt;
  private readonly sortOrderStmt;

  constructor(private readonly db: Db) {
    this.getStmt = db.prepare<[string, string], WatchedLogRow>(
      'SELECT * FROM watched_logs WHERE log = ? AND object_id = ?',
    );
    this.listStmt = db.prepare<[], WatchedLogRow>('SELECT * FROM watched_logs ORDER BY log, object_id');
    this.insertStmt = db.prepare(
      `INSERT INTO watched_logs (log, object_id, origin, coverage_start, window_end, created_at, next_poll_at)
       VALUES (@log, @objectId, @origin, @coverageStart, @windowEnd, @now, @now)
       ON CONFLICT (log, object_id) DO NOTHING`,
    );
    this.cursorStmt = db.prepare(
      `UPDATE watched_logs SET window_end = @windowEnd, last_poll_at = @now, last_success_at = @now,
         last_error = NULL, consecutive_failures = 0, entries_ingested = entries_ingested + @ingested
       WHERE log = @log AND object_id = @objectId`,
    );
    this.failureStmt = db.prepare(
      `UPDATE watched_logs SET last_poll_at = @now, last_error = @error, consecutive_failures = consecutive_failures + 1
       WHERE log = @log AND object_id = @objectId`,
    );
    this.statusStmt = db.prepare(
      'UPDATE watched_logs SET status = @status, status_reason = @reason WHERE log = @log AND object_id = @objectId',
    );
    this.sortOrderStmt = db.prepare('UPDATE watched_logs SET sort_order = ? WHERE log = ? AND object_id = ?');
  }

  async get(log: LogKind, objectId: string): Promise<WatchedLog | undefined> {
    const row = this.getStmt.get(log, objectId);
    return row ? watchedLogFromRow(row) : undefined;
  }

  async list(): Promise<WatchedLog[]> {
    return this.listStmt.all().map(watchedLogFromRow);
  }

  /**
   * Starts watching a log unless it is already watched (its cursor is then kept). `coverageStart`
   * is where emission starts: the service's "now" by default, or a configured startFrom.
   */
  async register(args: {
    log: LogKind;
    objectId: string;
    origin: WatchOrigin;
    coverageStart: number;
    now: number;
  }): Promise<boolean> {
    const windowed = args.log !== 'skill';
    const info = this.insertStmt.run({
      log: args.log,
      objectId: args.objectId,
      origin: args.origin,
      coverageStart: args.coverageStart,
      windowEnd: windowed ? args.coverageStart : null,
      now: args.now,
    });
    return info.changes === 1;
  }

  /** Part of the ingest transaction: records a completely read window or full read. */
  advance(args: { log: LogKind; objectId: string; windowEnd: number; ingested: number; now: number }): void {
    this.cursorStmt.run(args);
  }

  async recordFailure(log: LogKind, objectId: string, error: string, now: number): Promise<void> {
    this.failureStmt.run({ log, objectId, error, now });
  }

  async setStatus(log: LogKind, objectId: string, status: WatchStatus, reason: string | null): Promise<void> {
    this.statusStmt.run({ log, objectId, status, reason });
  }

  async setSortOrder(log: LogKind, objectId: string, order: SortOrder): Promise<void> {
    this.sortOrderStmt.run(order, log, objectId);
  }
}
