import type { ActivityEntry } from '../api/activityEntry.js';
import type { QuarantinedEntry } from '../api/quarantinedEntry.js';
import { performedAtMs } from '../api/activityEntry.js';
import type { ChangeCloudEvent } from '../events/cloudEvent.js';
import type { LogKind } from '../logs.js';
import { openDatabase, type Db } from './database.js';
import { DeadLetters } from './deadLetters.js';
import { Journal } from './journal.js';
import { Outbox } from './outbox.js';
import { Quarantine } from './quarantine.js';
import { StoreHealth, StoreUnavailableError } from './storeHealth.js';
import { SeenEntries } from './seenEntries.js';
import { SinkStates } from './sinkStates.js';
import { WatchedLogs } from './watchedLogs.js';

export interface IngestRequest {
  log: LogKind;
  objectId: string;
  /** Entries of one completed read, already in ingestion order. */
  entries: readonly ActivityEntry[];
  /** Entries that must be recorded as seen but not emitted (history before the start point). */
  silentEntries?: readonly ActivityEntry[];
  /** Entries of the read that cannot become events: kept aside in the same transaction. */
  quarantined?: readonly QuarantinedEntry[];
  /** The new cursor: exclusive end of what this read covered, in the service's clock. */
  windowEnd: number;
  /** Forget seen ids older than this (windowed logs only). */
  pruneSeenBefore?: number;
  toEvent: (entry: ActivityEntry) => ChangeCloudEvent;
  now: number;
}

export interface IngestResult {
  emitted: number;
  duplicates: number;
  /** performedAt of each emitted entry that has one (detection-delay metrics, rate estimates). */
  emittedPerformedAt: number[];
  /** Entries quarantined for the first time by this read. */
  quarantined: number;
}

/**
 * The store: one SQLite file holding cursors, seen ids, the outbox and delivery progress.
 * `ingest` is the single write path from polling, and it is one transaction: either the new
 * entries, their deliveries and the cursor advance are all committed, or none is.
 */
export class ChangefeedStore {
  readonly watchedLogs: WatchedLogs;
  readonly seen: SeenEntries;
  readonly outbox: Outbox;
  readonly deadLetters: DeadLetters;
  /** The outbox read as a journal, in ingestion order: the pull feed. */
  readonly journal: Journal;
  readonly sinks: SinkStates;
  readonly quarantine: Quarantine;
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

  static open(file: string): ChangefeedStore {
    return new ChangefeedStore(openDatabase(file));
  }

  /** Throws StoreUnavailableError when the disk is full or read-only: nothing of the read is kept, the cursor stays. */
  ingest(request: IngestRequest): IngestResult {
    try {
      const result = this.ingestTx(request);
      this.health.clear();
      return result;
    } catch (error) {
      if (!this.health.record(error, this.db.name)) throw error;
      throw new StoreUnavailableError(this.health.problem ?? 'the store cannot be written', error);
    }
  }

  getMeta(key: string): string | undefined {
    const row = this.db.prepare<[string], { value: string }>('SELECT value FROM meta WHERE key = ?').get(key);
    return row?.value;
  }

  setMeta(key: string, value: string): void {
    this.db
      .prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value')
      .run(key, value);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
