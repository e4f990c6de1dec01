import type { JournalStore } from '../changefeedStore.js';
import {
  MAX_SCAN_POSITIONS,
  PRUNED_THROUGH_KEY,
  type JournalEvent,
  type JournalPage,
  type JournalPageFilter,
} from '../storeRecords.js';
import type { TenantConnection } from './tenantConnection.js';

const HEAD = 'SELECT head FROM journal_heads WHERE tenant = ?';
const MOVE_HEAD = `INSERT INTO journal_heads (tenant, head) VALUES (?, ?)
  ON CONFLICT (tenant) DO UPDATE SET head = MAX(head, excluded.head)`;
const PRUNED = 'SELECT CAST(value AS INTEGER) AS value FROM meta WHERE tenant = ? AND key = ?';
const PAGE = `SELECT seq, payload FROM events
  WHERE tenant = @tenant AND seq > @after AND seq <= @head AND (@log IS NULL OR log = @log)
    AND (@type IS NULL OR type GLOB @type)
  ORDER BY seq LIMIT @limit`;

/**
 * The journal of one tenant read in ingestion order, for consumers that hold their own position
 * (the pull feed and its live stream). Positions are the tenant's `events.seq`: its head plus one
 * for each new event, so they grow in commit order and are never reused, since `journal_heads`
 * keeps the head when the events are pruned. On the process's one connection a read never sees
 * half an ingest transaction, so reading after a position never skips an event that is still in
 * the journal.
 */
export class Journal implements JournalStore {
  constructor(private readonly conn: TenantConnection) {}

  async head(): Promise<number> {
    return this.headNow();
  }

  /** The head, at once: the ingest transaction draws the next seqs from it. */
  headNow(): number {
    return this.conn.statement<[string], { head: number }>(HEAD).get(this.conn.tenant)?.head ?? 0;
  }

  /** Part of the ingest transaction: the highest seq it used. */
  moveHead(head: number): void {
    this.conn.statement(MOVE_HEAD).run(this.conn.tenant, head);
  }

  async prunedThrough(): Promise<number> {
    return (
      this.conn.statement<[string, string], { value: number }>(PRUNED).get(this.conn.tenant, PRUNED_THROUGH_KEY)
        ?.value ?? 0
    );
  }

  /**
   * A page shorter than `limit` and not cut by bytes read as far as it looked, so `next` is that
   * far: a filtered consumer does not scan the same non-matching events again.
   */
  async page(after: number, limit: number, filter: JournalPageFilter = {}): Promise<JournalPage> {
    const head = this.headNow();
    const scanTo = Math.min(head, after + MAX_SCAN_POSITIONS);
    const rows = this.conn.statement<object, JournalEvent>(PAGE).iterate({
      tenant: this.conn.tenant,
      after,
      head: scanTo,
      log: filter.log ?? null,
      type: filter.type ?? null,
      limit,
    });
    // Row by row, so the rows past the byte bound are never read out of SQLite.
    const maxBytes = filter.maxBytes ?? Infinity;
    const events: JournalEvent[] = [];
    let bytes = 0;
    let full = false;
    for (const row of rows) {
      bytes += Buffer.byteLength(row.payload, 'utf8');
      if (events.length > 0 && bytes > maxBytes) {
        full = true;
        break;
      }
      events.push(row);
    }
    const last = events[events.length - 1];
    const next = (full || events.length === limit) && last ? last.seq : Math.max(after, scanTo);
    return { events, next, reachedHead: next >= head };
  }
}
