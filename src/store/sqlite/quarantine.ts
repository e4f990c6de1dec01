import { createHash } from 'node:crypto';
import type { QuarantinedEntry } from '../../api/quarantinedEntry.js';
import type { LogKind } from '../../logs.js';
import type { QuarantineStore } from '../changefeedStore.js';
import type { QuarantineRecord } from '../storeRecords.js';
import type { Db } from './database.js';

interface Row {
  log: LogKind;
  object_id: string;
  entry_id: string | null;
  reason: string;
  raw: string;
  raw_bytes: number;
  request_id: string | null;
  first_seen_at: number;
}

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
    const fingerprint = createHash('sha256').update(`${entry.rawBytes}:${entry.raw}`).digest('hex');
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
      .prepare<[string | null, string | null, number], Row>(
        'SELECT * FROM quarantine WHERE (? IS NULL OR log = ?) ORDER BY first_seen_at DESC LIMIT ?',
      )
      .all(filter.log ?? null, filter.log ?? null, filter.limit ?? 1000);
    return rows.map((r) => ({
      log: r.log,
      objectId: r.object_id,
      entryId: r.entry_id,
      reason: r.reason,
      raw: r.raw,
      rawBytes: r.raw_bytes,
      requestId: r.request_id,
      firstSeenAt: r.first_seen_at,
    }));
  }
}
