import type { LogKind } from '../../logs.js';
import type { SeenEntryStore } from '../changefeedStore.js';
import type { TenantConnection } from './tenantConnection.js';

const INSERT = `INSERT INTO seen_entries (tenant, log, object_id, entry_id, performed_at, seen_at) VALUES (?, ?, ?, ?, ?, ?)
  ON CONFLICT DO NOTHING`;
const HAS = 'SELECT 1 AS one FROM seen_entries WHERE tenant = ? AND log = ? AND object_id = ? AND entry_id = ?';
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

  /** seenAmong at once, for the ingest transaction: one indexed lookup per id. */
  among(log: LogKind, objectId: string, entryIds: readonly string[]): Set<string> {
    if (entryIds.length === 0) return new Set();
    const has = this.conn.statement<[string, string, string, string], { one: number }>(HAS);
    return new Set(entryIds.filter((id) => has.get(this.conn.tenant, log, objectId, id) !== undefined));
  }

  /** Forgets ids older than `before`; only for windowed logs, whose windows never reach that far back. */
  prune(log: LogKind, objectId: string, before: number): number {
    return this.conn.statement(PRUNE).run(this.conn.tenant, log, objectId, before).changes;
  }
}
