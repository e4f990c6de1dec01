import type { LogKind } from '../../logs.js';
import type { SeenEntryStore } from '../changefeedStore.js';
import type { TenantConnection } from './tenantConnection.js';

const INSERT = `INSERT INTO seen_entries (tenant, log, object_id, entry_id, performed_at, seen_at) VALUES (?, ?, ?, ?, ?, ?)
  ON CONFLICT DO NOTHING`;
// One statement per question, however many ids: a lookup by primary key for each id of the list.
const AMONG = `SELECT entry_id FROM seen_entries WHERE tenant = ? AND log = ? AND object_id = ?
  AND entry_id IN (SELECT value FROM json_each(?))`;
// An entry without performedAt is aged by when we first saw it.
const PRUNE =
  'DELETE FROM seen_entries WHERE tenant = ? AND log = ? AND object_id = ? AND COALESCE(performed_at, seen_at) < ?';

/** Entry ids already ingested per log, the basis of deduplication across overlapping windows. */
export class SeenEntries implements SeenEntryStore {
  constructor(private readonly conn: TenantConnection) {}

  /** Records an id (kept as it is when already recorded). Call inside the ingest transaction. */
  add(log: LogKind, objectId: string, entryId: string, performedAt: number | null, now: number): void {
    this.conn.statement(INSERT).run(this.conn.tenant, log, objectId, entryId, performedAt, now);
  }

  async seenAmong(log: LogKind, objectId: string, entryIds: readonly string[]): Promise<Set<string>> {
    return this.among(log, objectId, entryIds);
  }

  /** seenAmong at once, for the ingest transaction: one statement for the whole list. */
  among(log: LogKind, objectId: string, entryIds: readonly string[]): Set<string> {
    if (entryIds.length === 0) return new Set();
    const rows = this.conn
      .statement<[string, string, string, string], { entry_id: string }>(AMONG)
      .all(this.conn.tenant, log, objectId, JSON.stringify(entryIds));
    return new Set(rows.map((r) => r.entry_id));
  }

  /** Forgets ids older than `before`; only for windowed logs, whose windows never reach that far back. */
  prune(log: LogKind, objectId: string, before: number): number {
    return this.conn.statement(PRUNE).run(this.conn.tenant, log, objectId, before).changes;
  }
}
