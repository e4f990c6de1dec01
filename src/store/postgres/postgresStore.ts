import { performedAtMs } from '../../api/activityEntry.js';
import type { ChangefeedStore } from '../changefeedStore.js';
import type { StoreHealth } from '../storeHealth.js';
import type { IngestRequest, IngestResult } from '../storeRecords.js';
import { PostgresDeadLetters } from './deadLetters.js';
import type { RequeueCounts } from './requeueCounts.js';
import { PostgresJournal } from './journal.js';
import { PostgresOutbox, type NewEvent } from './outbox.js';
import { PostgresQuarantine } from './quarantine.js';
import { PostgresRateEstimates } from './rateEstimates.js';
import { PostgresSeenEntries } from './seenEntries.js';
import { PostgresSinkStates } from './sinkStates.js';
import type { TenantDb } from './tenantDb.js';
import { PostgresWatchedLogs } from './watchedLogs.js';
import { storableText } from './storableText.js';

/**
 * The store contract for one tenant of a PostgreSQL store (PostgresStoreBackend.tenantStore).
 * Every query names the tenant; the pool, shared with the other tenants, belongs to the backend.
 */
export class PostgresChangefeedStore implements ChangefeedStore {
  readonly watchedLogs: PostgresWatchedLogs;
  readonly seen: PostgresSeenEntries;
  readonly outbox: PostgresOutbox;
  readonly deadLetters: PostgresDeadLetters;
  readonly journal: PostgresJournal;
  readonly sinks: PostgresSinkStates;
  readonly quarantine: PostgresQuarantine;
  readonly rates: PostgresRateEstimates;
  private open = true;

  constructor(
    private readonly db: TenantDb,
    requeueCounts: RequeueCounts,
  ) {
    this.watchedLogs = new PostgresWatchedLogs(db);
    this.seen = new PostgresSeenEntries(db);
    this.outbox = new PostgresOutbox(db);
    this.deadLetters = new PostgresDeadLetters(db, requeueCounts);
    this.journal = new PostgresJournal(db);
    this.sinks = new PostgresSinkStates(db);
    this.quarantine = new PostgresQuarantine(db);
    this.rates = new PostgresRateEstimates(db);
  }

  get tenant(): string {
    return this.db.tenant;
  }

  get location(): string {
    return this.db.location;
  }

  get health(): StoreHealth {
    return this.db.health;
  }

  get isOpen(): boolean {
    return this.open;
  }

  /**
   * The steps of SqliteChangefeedStore.ingest, in one transaction, each a statement for the whole
   * page (a 200-entry page is a few round trips, not hundreds). Its first write locks the
   * tenant's `journal_heads` row until commit: ingests of a tenant run one at a time, and each
   * draws its seqs only once the previous one committed, so a tenant's seqs grow in commit order
   * and the head a reader sees never has an uncommitted seq below it (see PostgresJournal).
   */
  async ingest(req: IngestRequest): Promise<IngestResult> {
    return this.db.transaction(async (query) => {
      await query(
        `INSERT INTO journal_heads (tenant, head) VALUES ($1, 0)
         ON CONFLICT (tenant) DO UPDATE SET head = journal_heads.head`,
        [this.db.tenant],
      );
      const quarantined = await this.quarantine.add(query, req.log, req.objectId, req.quarantined ?? [], req.now);

      // Silent entries first, then the page; an id recorded earlier in the same read is a duplicate.
      const ids = new Set<string>();
      const toRecord: { id: string; performedAt: number | null }[] = [];
      for (const entry of req.silentEntries ?? []) {
        const id = storableText(entry.id);
        if (!ids.has(id)) {
          ids.add(id);
          toRecord.push({ id, performedAt: performedAtMs(entry) });
        }
      }
      const firstInRead = req.entries.map((entry) => {
        const id = storableText(entry.id);
        if (ids.has(id)) return false;
        ids.add(id);
        toRecord.push({ id, performedAt: performedAtMs(entry) });
        return true;
      });
      const fresh = await this.seen.add(query, {
        log: req.log,
        objectId: req.objectId,
        entries: toRecord,
        now: req.now,
      });

      // Events are built only for entries never seen, as SQLite does; a throw rolls everything back.
      const candidates: { performedAt: number | null; eventId: string }[] = [];
      const events: NewEvent[] = [];
      const eventIds = new Set<string>();
      req.entries.forEach((entry, i) => {
        if (!firstInRead[i] || !fresh.has(storableText(entry.id))) return;
        const event = req.toEvent(entry);
        const performedAt = performedAtMs(entry);
        if (eventIds.has(event.id)) return;
        eventIds.add(event.id);
        candidates.push({ performedAt, eventId: event.id });
        events.push({ eventId: event.id, type: event.type, performedAt, payload: JSON.stringify(event) });
      });
      const appended = await this.outbox.append(query, events, {
        log: req.log,
        objectId: req.objectId,
        now: req.now,
      });

      const emittedPerformedAt: number[] = [];
      let emitted = 0;
      for (const candidate of candidates) {
        if (!appended.has(candidate.eventId)) continue;
        emitted++;
        if (candidate.performedAt !== null) emittedPerformedAt.push(candidate.performedAt);
      }
      await this.watchedLogs.advance(query, {
        log: req.log,
        objectId: req.objectId,
        windowEnd: req.windowEnd,
        ingested: emitted,
        now: req.now,
      });
      if (req.pruneSeenBefore !== undefined) await this.seen.prune(query, req.log, req.objectId, req.pruneSeenBefore);
      return { emitted, duplicates: req.entries.length - emitted, emittedPerformedAt, quarantined };
    });
  }

  async getMeta(key: string): Promise<string | undefined> {
    const rows = await this.db.read<{ value: string }>('SELECT value FROM meta WHERE tenant = $1 AND key = $2', [
      this.db.tenant,
      key,
    ]);
    return rows[0]?.value;
  }

  async setMeta(key: string, value: string): Promise<void> {
    await this.db.writeOne(
      `INSERT INTO meta (tenant, key, value) VALUES ($1, $2, $3)
       ON CONFLICT (tenant, key) DO UPDATE SET value = excluded.value`,
      [this.db.tenant, key, value],
    );
  }

  async journalSize(): Promise<number> {
    const rows = await this.db.read<{ n: number }>('SELECT COUNT(*) AS n FROM events WHERE tenant = $1', [
      this.db.tenant,
    ]);
    return rows[0]?.n ?? 0;
  }

  /** Closes this tenant's view; the pool stays with the backend, which closes it. */
  close(): Promise<void> {
    this.open = false;
    return Promise.resolve();
  }
}
