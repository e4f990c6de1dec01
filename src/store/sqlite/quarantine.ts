import type { QuarantinedEntry } from '../../api/quarantinedEntry.js';
import type { LogKind } from '../../logs.js';
import type { QuarantineStore } from '../changefeedStore.js';
import { quarantineFingerprint, quarantineFromRow, type QuarantineRow } from '../storedRows.js';
import type { QuarantineRecord } from '../storeRecords.js';
import type { Db } from './database.js';

/**
 * Entries the service sent that could not become events, kept for the operator
 * (`changefeed quarantine list`). A page read again (the overlap, a retry) finds them again:
 * the fingerprint of the raw JSON keeps each one once.
 */
export class Quarantine implements QuarantineStore {
  private readonly insertStmt;

  constructor(private readonly db: Db) {
    this.insertStmt = db.prepare(
      `INSERT OR IGNORE INTO quarantine (log, object_id, fingerprint, entry_id, reason, raw, raw_bytes, request_id, first_seen_at)
       VALUES (@log, @objectId, @fingerprint, @entryId, @reason, @raw, @rawBytes, @requestId, @now)`,
    );
  }

  /** True when the entry was not quarantined before. */
  add(log: LogKind, objectId: string, entry: QuarantinedEntry, now: number): boolean {
    const fingerprint = quarantineFingerprint(entry);
    return (
      this.insertStmt.run({
        log,
        objectId,
        fingerprint,
        entryId: entry.entryId ?? null,
        reason: entry.reason,
        raw: entry.raw,
        rawBytes: entry.rawBytes,
        requestId: entry.requestId ?? null,
        now,
      }).changes > 0
    );
  }

  async count(): Promise<number> {
    return (this.db.prepare('SELECT COUNT(*) AS n FROM quarantine').get() as { n: number }).n;
  }

  /** Newest first. */
  async list(filter: { log?: LogKind; limit?: number } = {}): Promise<QuarantineRecord[]> {
    const rows = this.db
      .prepare<[string | null, string | null, number], QuarantineRow>(
        'SELECT * FROM quarantine WHERE (? IS NULL OR log = ?) ORDER BY first_seen_at DESC LIMIT ?',
      )
      .all(filter.log ?? null, filter.log ?? null, filter.limit ?? 1000);
    return rows.map(quarantineFromRow);
  }
}
