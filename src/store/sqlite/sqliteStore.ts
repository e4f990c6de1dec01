import { performedAtMs } from '../../api/activityEntry.js';
import type { ChangefeedStore } from '../changefeedStore.js';
import type { IngestRequest, IngestResult } from '../storeRecords.js';
import { openDatabase, type Db } from './database.js';
import { DeadLetters } from './deadLetters.js';
import { Journal } from './journal.js';
import { Outbox } from './outbox.js';
import { Quarantine } from './quarantine.js';
import { StoreHealth, StoreUnavailableError } from '../storeHealth.js';
import { SeenEntries } from './seenEntries.js';
import { RateEstimates } from './rateEstimates.js';
import { SinkStates } from './sinkStates.js';
import { WatchedLogs } from './watchedLogs.js';

/**
 * The store contract kept in one SQLite file: cursors, seen ids, the outbox and delivery
 * progress of one tenant. better-sqlite3 answers synchronously, so each method does its work
 * before returning its promise, and `ingest` is one SQLite transaction.
 */
export class SqliteChangefeedStore implements ChangefeedStore {
  readonly watchedLogs: WatchedLogs;
  readonly seen: SeenEntries;
  readonly outbox: Outbox;
  readonly deadLetters: DeadLetters;
  /** The outbox read as a journal, in ingestion order: the pull feed. */
  readonly journal: Journal;
  readonly sinks: SinkStates;
  readonly quarantine: Quarantine;
  readonly rates: RateEstimates;
  /** Whether writes work; see StoreHealth. */
  readonly health = new StoreHealth();
  private readonly ingestTx;

  constructor(readonly db: Db) {
    this.watchedLogs = new WatchedLogs(db);
    this.seen = new SeenEntries(db);
    this.outbox = new Outbox(db);
    this.deadLetters = new DeadLetters(db);
    this.journal = new Journal(db);
    this.sinks = new SinkStates(db);
    this.quarantine = new Quarantine(db);
    this.rates = new RateEstimates(db);
    this.ingestTx = db.transaction((req: IngestRequest): IngestResult => {
      let emitted = 0;
      let duplicates = 0;
      const emittedPerformedAt: number[] = [];
      let quarantined = 0;
      for (const entry of req.quarantined ?? [])
        if (this.quarantine.add(req.log, req.objectId, entry, req.now)) quarantined++;
      for (const entry of req.silentEntries ?? []) {
        this.seen.add(req.log, req.objectId, entry.id, performedAtMs(entry), req.now);
      }
      for (const entry of req.entries) {
        const performedAt = performedAtMs(entry);
        if (!this.seen.add(req.log, req.objectId, entry.id, performedAt, req.now)) {
          duplicates++;
          continue;
        }
        if (
          this.outbox.append(req.toEvent(entry), { log: req.log, objectId: req.objectId, performedAt, now: req.now })
        ) {
          emitted++;
          if (performedAt !== null) emittedPerformedAt.push(performedAt);
        } else duplicates++;
      }
      this.watchedLogs.advance({
        log: req.log,
        objectId: req.objectId,
        windowEnd: req.windowEnd,
        ingested: emitted,
        now: req.now,
      });
      if (req.pruneSeenBefore !== undefined) this.seen.prune(req.log, req.objectId, req.pruneSeenBefore);
      return { emitted, duplicates, emittedPerformedAt, quarantined };
    });
  }

  static open(file: string, options: { readonly?: boolean; cacheKiB?: number } = {}): SqliteChangefeedStore {
    return new SqliteChangefeedStore(openDatabase(file, options));
  }

  get location(): string {
    return this.db.name;
  }

  get isOpen(): boolean {
    return this.db.open;
  }

  /** Throws StoreUnavailableError when the disk is full or read-only: nothing of the read is kept, the cursor stays. */
  async ingest(request: IngestRequest): Promise<IngestResult> {
    try {
      const result = this.ingestTx(request);
      this.health.clear();
      return result;
    } catch (error) {
      if (!this.health.record(error, this.db.name)) throw error;
      throw new StoreUnavailableError(this.health.problem ?? 'the store cannot be written', error);
    }
  }

  async getMeta(key: string): Promise<string | undefined> {
    const row = this.db.prepare<[string], { value: string }>('SELECT value FROM meta WHERE key = ?').get(key);
    return row?.value;
  }

  async setMeta(key: string, value: string): Promise<void> {
    this.db
      .prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value')
      .run(key, value);
  }

  async journalSize(): Promise<number> {
    return (this.db.prepare('SELECT COUNT(*) AS n FROM events').get() as { n: number }).n;
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}
