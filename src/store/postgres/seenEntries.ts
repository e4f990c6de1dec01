import { performedAtMs, type ActivityEntry } from '../../api/activityEntry.js';
import type { LogKind } from '../../logs.js';
import type { SeenEntryStore } from '../changefeedStore.js';
import type { Query, TenantDb } from './tenantDb.js';
import { storableText } from './storableText.js';

/** Entry ids already ingested per log of one tenant, the basis of deduplication across overlapping windows. */
export class PostgresSeenEntries implements SeenEntryStore {
  constructor(private readonly db: TenantDb) {}

  async seenAmong(log: LogKind, objectId: string, entryIds: readonly string[]): Promise<Set<string>> {
    if (entryIds.length === 0) return new Set();
    const rows = await this.db.read<{ entry_id: string }>(
      `SELECT entry_id FROM seen_entries WHERE tenant = $1 AND log = $2 AND object_id = $3 AND entry_id = ANY($4::text[])`,
      [this.db.tenant, log, objectId, entryIds.map(storableText)],
    );
    // Answered with the ids as asked: one with a NUL is stored with U+FFFD (storableText).
    const stored = new Set(rows.map((r) => r.entry_id));
    return new Set(entryIds.filter((id) => stored.has(storableText(id))));
  }

  /** Part of the ingest transaction: records the entries' ids (each once, as decideIngest gives them), one statement for the page. */
  async add(
    query: Query,
    args: { log: LogKind; objectId: string; entries: readonly ActivityEntry[]; now: number },
  ): Promise<void> {
    if (args.entries.length === 0) return;
    await query(
      `INSERT INTO seen_entries (tenant, log, object_id, entry_id, performed_at, seen_at)
       SELECT $1, $2, $3, u.entry_id, u.performed_at, $6
       FROM unnest($4::text[], $5::float8[]) AS u (entry_id, performed_at)
       ON CONFLICT DO NOTHING`,
      [
        this.db.tenant,
        args.log,
        args.objectId,
        args.entries.map((e) => storableText(e.id)),
        args.entries.map(performedAtMs),
        args.now,
      ],
    );
  }

  /** Part of the ingest transaction: forgets ids older than `before` (an undated one aged by when it was seen). */
  async prune(query: Query, log: LogKind, objectId: string, before: number): Promise<void> {
    await query(
      `DELETE FROM seen_entries WHERE tenant = $1 AND log = $2 AND object_id = $3 AND COALESCE(performed_at, seen_at) < $4`,
      [this.db.tenant, log, objectId, before],
    );
  }
}
