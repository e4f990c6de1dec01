import type { JournalStore } from '../changefeedStore.js';
import {
  MAX_SCAN_POSITIONS,
  PRUNED_THROUGH_KEY,
  type JournalEvent,
  type JournalPage,
  type JournalPageFilter,
} from '../storeRecords.js';
import { globToLike } from './globPattern.js';
import type { TenantDb } from './tenantDb.js';

/**
 * The journal of one tenant read in ingestion order, for consumers that hold their own position
 * (the pull feed and its live stream). Positions are `events.seq`, an identity shared by the
 * tenants: a tenant's positions grow in commit order but leave gaps, which a reader never needs
 * to tell apart from pruned or filtered events.
 *
 * A read never skips an event that a later read would find: it reads the tenant's head first and
 * only events up to it, and no seq below a visible head is still in flight (the head's row lock
 * orders a tenant's ingests: PostgresChangefeedStore.ingest).
 */
export class PostgresJournal implements JournalStore {
  constructor(private readonly db: TenantDb) {}

  async head(): Promise<number> {
    const rows = await this.db.read<{ head: number }>('SELECT head FROM journal_heads WHERE tenant = $1', [
      this.db.tenant,
    ]);
    return rows[0]?.head ?? 0;
  }

  async prunedThrough(): Promise<number> {
    const rows = await this.db.read<{ value: number }>(
      'SELECT value::bigint AS value FROM meta WHERE tenant = $1 AND key = $2',
      [this.db.tenant, PRUNED_THROUGH_KEY],
    );
    return rows[0]?.value ?? 0;
  }

  /** As the SQLite Journal's: a page shorter than `limit` read as far as it looked, and `next` is that far. */
  async page(after: number, limit: number, filter: JournalPageFilter = {}): Promise<JournalPage> {
    const head = await this.head();
    const scanTo = Math.min(head, after + MAX_SCAN_POSITIONS);
    // The running total of the JSON's bytes is summed in the database (octet_length reads a
    // stored value's size without decompressing it), so payloads past the bound never leave it:
    // the first row that does not fit comes back without its payload, to say the page was cut.
    const rows = await this.db.read<{ seq: number; payload: string | null; fits: boolean }>(
      `SELECT seq, CASE WHEN fits THEN payload END AS payload, fits FROM (
         SELECT seq, payload, fits, ROW_NUMBER() OVER (PARTITION BY fits ORDER BY seq) AS rank FROM (
           SELECT seq, payload, (before = 0 OR $7::bigint IS NULL OR before + size <= $7::bigint) AS fits
           FROM (
             SELECT seq, payload, octet_length(payload)::bigint AS size,
                    (SUM(octet_length(payload)) OVER (ORDER BY seq ROWS UNBOUNDED PRECEDING))::bigint
                      - octet_length(payload) AS before
             FROM events
             WHERE tenant = $1 AND seq > $2 AND seq <= $3 AND ($4::text IS NULL OR log = $4)
               AND ($5::text IS NULL OR type LIKE $5 ESCAPE '\\')
             ORDER BY seq LIMIT $6
           ) sized
         ) judged
       ) ranked
       WHERE fits OR rank = 1
       ORDER BY seq`,
      [
        this.db.tenant,
        after,
        scanTo,
        filter.log ?? null,
        filter.type === undefined ? null : globToLike(filter.type),
        limit,
        filter.maxBytes ?? null,
      ],
    );
    const events: JournalEvent[] = [];
    for (const row of rows) if (row.fits && row.payload !== null) events.push({ seq: row.seq, payload: row.payload });
    const full = events.length < rows.length;
    const last = events[events.length - 1];
    const next = (full || events.length === limit) && last ? last.seq : Math.max(after, scanTo);
    return { events, next, reachedHead: next >= head };
  }
}
