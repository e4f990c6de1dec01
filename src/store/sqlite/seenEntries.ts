import type { LogKind } from '../../logs.js';
import type { SeenEntryStore } from '../changefeedStore.js';
import type { Db } from './database.js';

/** Entry ids already ingested per log, the basis of deduplication across overlapping windows. */
export class SeenEntries implements SeenEntryStore {
  private readonly insertStmt;
  private readonly hasStmt;
  private readonly pruneStmt;

  constructor(db: Db) {
    this.insertStmt = db.prepare(
      `INSERT INTO seen_entries (log, object_id, entry_id, performed_at, seen_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT DO NOTHING`,
    );
    this.hasStmt = db.prepare<[string, string, string], { one: number }>(
      'SELECT 1 AS one FROM seen_entries WHERE log = ? AND object_id = ? AND entry_id = ?',
    );
    // An entry without performedAt is aged by when we first saw it.
    this.pruneStmt = db.prepare(
      'DELETE FROM seen_entries WHERE log = ? AND object_id = ? AND COALESCE(performed_at, seen_at) < ?',
    );
  }

  /** Records an id; true when it was new. Call inside the ingest transaction. */
  add(log: LogKind, objectId: string, entryId: string, performedAt: number | null, now: number): boolean {
    return this.insertStmt.run(log, objectId, entryId, performedAt, now).changes === 1;
  }

  async seenAmong(log: LogKind, objectId: string, entryIds: readonly string[]): Promise<Set<string>> {
    return new Set(entryIds.filter((id) => this.hasStmt.get(log, objectId, id) !== undefined));
  }

  /** Forgets ids older than `before`; only for windowed logs, whose windows never reach that far back. */
  prune(log: LogKind, objectId: string, before: number): number {
    return this.pruneStmt.run(log, objectId, before).changes;
  }
}
