import { performedAtMs, type ActivityEntry } from '../../api/activityEntry.js';
import type { LogKind } from '../../logs.js';
import type { SeenEntryStore } from '../changefeedStore.js';
import { BatchedRead } from './batchedRead.js';
import type { Query, TenantDb } from './tenantDb.js';

/**
 * An entry id as seen_entries keeps it. PostgreSQL's text cannot hold U+0000, so a NUL is written
 * as U+FFFD followed by "0", and a U+FFFD of the id as two of them: ids stay told apart exactly as
 * SQLite tells them apart, and an id with neither character is kept as it is.
 */
export function storedEntryId(id: string): string {
  return id.replace(/[\uFFFD\0]/g, (c) => (c === '\0' ? '\uFFFD0' : '\uFFFD\uFFFD'));
}

interface SeenRow {
  tenant: string;
  log: string;
  object_id: string;
  entry_id: string;
}

/** A stored entry id of one log of one tenant, as a key of seenEntriesRead (no part holds a NUL: storedEntryId). */
const seenKey = (tenant: string, log: string, objectId: string, storedId: string): string =>
  `${tenant}\u0000${log}\u0000${objectId}\u0000${storedId}`;

/**
 * Which of the asked entry ids are seen, for every asking tenant's log at once (BatchedRead): the
 * version logs' polls ask on every page.
 */
export function seenEntriesRead(): BatchedRead<SeenRow> {
  return new BatchedRead<SeenRow>(
    (keys) => {
      const parts = keys.map((key) => key.split('\u0000'));
      return {
        sql: `SELECT s.tenant, s.log, s.object_id, s.entry_id FROM seen_entries s
              JOIN unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS u (tenant, log, object_id, entry_id)
                ON s.tenant = u.tenant AND s.log = u.log AND s.object_id = u.object_id AND s.entry_id = u.entry_id`,
        params: [0, 1, 2, 3].map((i) => parts.map((part) => part[i] ?? '')),
      };
    },
    (row) => seenKey(row.tenant, row.log, row.object_id, row.entry_id),
  );
}

/** Entry ids already ingested per log of one tenant, the basis of deduplication across overlapping windows. */
export class PostgresSeenEntries implements SeenEntryStore {
  constructor(
    private readonly db: TenantDb,
    private readonly seenRead: BatchedRead<SeenRow>,
  ) {}

  async seenAmong(log: LogKind, objectId: string, entryIds: readonly string[]): Promise<Set<string>> {
    if (entryIds.length === 0) return new Set();
    const answers = await Promise.all(
      entryIds.map((id) => this.seenRead.rowsOf(this.db, seenKey(this.db.tenant, log, objectId, storedEntryId(id)))),
    );
    return new Set(entryIds.filter((_, i) => (answers[i]?.length ?? 0) > 0));
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
