import { performedAtMs, type ActivityEntry } from '../../api/activityEntry.js';
import type { LogKind } from '../../logs.js';
import type { SeenEntryStore } from '../changefeedStore.js';
import type { Query, TenantDb } from './tenantDb.js';

/**
 * An entry id as seen_entries keeps it. PostgreSQL's text cannot hold U+0000, so a NUL is written
 * as U+FFFD followed by "0", and a U+FFFD of the id as two of them: ids stay told apart exactly as
 * SQLite tells them apart, and an id with neither character is kept as it is.
 */
export function storedEntryId(id: string): string {
  return id.replace(/[\uFFFD\0]/g, (c) => (c === '\0' ? '\uFFFD0' : '\uFFFD\uFFFD'));
}

/** Entry ids already ingested per log of one tenant, the basis of deduplication across overlapping windows. */
export class PostgresSeenEntries implements SeenEntryStore {
  constructor(private readonly db: TenantDb) {}

  async seenAmong(log: LogKind, objectId: string, entryIds: readonly string[]): Promise<Set<string>> {
    if (entryIds.length === 0) return new Set();
    const rows = await this.db.read<{ entry_id: string }>(
      `SELECT entry_id FROM seen_entries WHERE tenant = $1 AND log = $2 AND object_id = $3 AND entry_id = ANY($4::text[])`,
      [this.db.tenant, log, objectId, entryIds.map(storedEntryId)],
    );
    const stored = new Set(rows.map((r) => r.entry_id));
    return new Set(entryIds.filter((id) => stored.has(storedEntryId(id))));
  }

  /** Part of the ingest transaction: records the entries' ids (each once, as decideIngest gives them), one statement for the page. */
  add(query: Query, args: { log: LogKind; objectId: string; entries: readonly ActivityEntry[]; now: number }): void {
    if (args.entries.length === 0) return;
    query.later(
      `INSERT INTO seen_entries (tenant, log, object_id, entry_id, performed_at, seen_at)
       SELECT $1, $2, $3, u.entry_id, u.performed_at, $6
       FROM unnest($4::text[], $5::float8[]) AS u (entry_id, performed_at)
       ON CONFLICT DO NOTHING`,
      [
        this.db.tenant,
        args.log,
        args.objectId,
        args.entries.map((e) => storedEntryId(e.id)),
        args.entries.map(performedAtMs),
        args.now,
      ],
    );
  }
}
