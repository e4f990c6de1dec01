import type { LogKind } from '../../logs.js';
import type { JournalStore } from '../changefeedStore.js';
import { MAX_SCAN_POSITIONS, type JournalEvent, type JournalPage } from '../storeRecords.js';
import type { Db } from './database.js';

/** The meta key of the highest `seq` ever pruned from the journal. */
export const PRUNED_THROUGH_KEY = 'journal.prunedThroughSeq';

/**
 * The journal read in ingestion order, for consumers that hold their own position (the pull feed
 * and its live stream). Positions are `events.seq`: assigned in commit order by AUTOINCREMENT,
 * never reused, and on the daemon's one connection a read never sees half an ingest transaction,
 * so reading after a position never skips an event that is still in the journal.
 *
 * Pruning (Outbox.prune) removes events past the retention and records the highest seq it removed;
 * a position below that may have missed events, and `prunedThrough` lets the feed say so (410)
 * instead of skipping them silently.
 */
export class Journal implements JournalStore {
  private readonly headStmt;
  private readonly prunedStmt;
  private readonly pageStmt;

  constructor(db: Db) {
    this.headStmt = db.prepare<[], { seq: number }>(`SELECT seq FROM sqlite_sequence WHERE name = 'events'`);
    this.prunedStmt = db.prepare<[string], { value: number }>(
      'SELECT CAST(value AS INTEGER) AS value FROM meta WHERE key = ?',
    );
    this.pageStmt = db.prepare<
      [{ after: number; head: number; log: string | null; type: string | null; limit: number }],
      JournalEvent
    >(
      `SELECT seq, payload FROM events
       WHERE seq > @after AND seq <= @head AND (@log IS NULL OR log = @log) AND (@type IS NULL OR type GLOB @type)
       ORDER BY seq LIMIT @limit`,
    );
  }

  /** The highest seq ever assigned; 0 before the first event. */
  async head(): Promise<number> {
    return this.headNow();
  }

  private headNow(): number {
    return this.headStmt.get()?.seq ?? 0;
  }

  /** The highest seq pruned so far; 0 when nothing was. Reading after a lower position may miss events. */
  async prunedThrough(): Promise<number> {
    return this.prunedStmt.get(PRUNED_THROUGH_KEY)?.value ?? 0;
  }

  /**
   * Up to `limit` events after `after`, optionally of one log and with a type matching a SQLite
   * GLOB, looking at no more than MAX_SCAN_POSITIONS positions. A page shorter than `limit` read
   * as far as it looked, so `next` is that far: a filtered consumer does not scan the same
   * non-matching events again.
   */
  async page(
    after: number,
    limit: number,
    filter: { log?: LogKind | undefined; type?: string | undefined } = {},
  ): Promise<JournalPage> {
    const head = this.headNow();
    const scanTo = Math.min(head, after + MAX_SCAN_POSITIONS);
    const events = this.pageStmt.all({
      after,
      head: scanTo,
      log: filter.log ?? null,
      type: filter.type ?? null,
      limit,
    });
    const next = events.length === limit ? (events[events.length - 1] as JournalEvent).seq : Math.max(after, scanTo);
    return { events, next, reachedHead: next >= head };
  }
}
