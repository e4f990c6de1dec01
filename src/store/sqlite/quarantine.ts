import type { QuarantinedEntry } from '../../api/quarantinedEntry.js';
import type { LogKind } from '../../logs.js';
import type { QuarantineStore } from '../changefeedStore.js';
import { fromRow, QUARANTINE_COLUMNS, quarantineFingerprint, type RowOf } from '../storedRows.js';
import type { QuarantineRecord } from '../storeRecords.js';
import type { TenantConnection } from './tenantConnection.js';

const INSERT = `INSERT OR IGNORE INTO quarantine
    (tenant, log, object_id, fingerprint, entry_id, reason, raw, raw_bytes, request_id, first_seen_at)
  VALUES (@tenant, @log, @objectId, @fingerprint, @entryId, @reason, @raw, @rawBytes, @requestId, @now)`;
const KNOWN = 'SELECT 1 AS one FROM quarantine WHERE tenant = ? AND log = ? AND object_id = ? AND fingerprint = ?';
const COUNT = 'SELECT COUNT(*) AS n FROM quarantine WHERE tenant = ?';
const LIST = `SELECT ${QUARANTINE_COLUMNS} FROM quarantine WHERE tenant = @tenant AND (@log IS NULL OR log = @log)
  ORDER BY first_seen_at DESC LIMIT @limit`;

export class Quarantine implements QuarantineStore {
  constructor(private readonly conn: TenantConnection) {}

  /** Part of the ingest transaction: keeps the entry, once per raw entry. */
  add(log: LogKind, objectId: string, entry: QuarantinedEntry, now: number): void {
    this.conn.statement<object>(INSERT).run({
      tenant: this.conn.tenant,
      log,
      objectId,
      fingerprint: quarantineFingerprint(entry),
      entryId: entry.entryId ?? null,
      reason: entry.reason,
      raw: entry.raw,
      rawBytes: entry.rawBytes,
      requestId: entry.requestId ?? null,
      now,
    });
  }

  /** Which of the fingerprints (quarantineFingerprint) the log's quarantine holds, for the ingest transaction. */
  known(log: LogKind, objectId: string, fingerprints: readonly string[]): Set<string> {
    if (fingerprints.length === 0) return new Set();
    const has = this.conn.statement<[string, string, string, string], { one: number }>(KNOWN);
    return new Set(fingerprints.filter((f) => has.get(this.conn.tenant, log, objectId, f) !== undefined));
  }

  async count(): Promise<number> {
    return this.conn.statement<[string], { n: number }>(COUNT).get(this.conn.tenant)?.n ?? 0;
  }

  /** Newest first. */
  async list(filter: { log?: LogKind; limit?: number } = {}): Promise<QuarantineRecord[]> {
    return this.conn
      .statement<{ tenant: string; log: string | null; limit: number }, RowOf<QuarantineRecord>>(LIST)
      .all({ tenant: this.conn.tenant, log: filter.log ?? null, limit: filter.limit ?? 1000 })
      .map(fromRow<QuarantineRecord>);
  }
}
