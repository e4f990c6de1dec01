import { performedAtMs } from '../../api/activityEntry.js';
import type { ChangefeedStore } from '../changefeedStore.js';
import type { IngestRequest, IngestResult } from '../storeRecords.js';
import type { Db } from './database.js';
import { DeadLetters } from './deadLetters.js';
import { Journal } from './journal.js';
import { Outbox } from './outbox.js';
import { Quarantine } from './quarantine.js';
import { StoreHealth, StoreUnavailableError } from '../storeHealth.js';
import { SeenEntries } from './seenEntries.js';
import { RateEstimates } from './rateEstimates.js';
import { SinkStates } from './sinkStates.js';
import { WatchedLogs } from './watchedLogs.js';
import { TenantConnection } from './tenantConnection.js';
import { DEFAULT_TENANT } from '../../tenants/tenant.js';

const GET_META = 'SELECT value FROM meta WHERE tenant = ? AND key = ?';
const SET_META = `INSERT INTO meta (tenant, key, value) VALUES (?, ?, ?)
  ON CONFLICT (tenant, key) DO UPDATE SET value = excluded.value`;
const JOURNAL_SIZE = 'SELECT COUNT(*) AS n FROM events WHERE tenant = ?';

/**
 * The store contract kept in a SQLite file: cursors, seen ids, the outbox and delivery progress
 * of one tenant, beside any other tenants of the file (TenantConnection). better-sqlite3 answers
 * synchronously, so each method does its work before returning its promise, and `ingest` is one
 * SQLite transaction.
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

  private readonly conn: TenantConnection;
  private open = true;

  /** `ownsConnection`: closing the store closes the connection (false when the tenants of a backend share it). */
  constructor(
    readonly db: Db,
    readonly tenant: string = DEFAULT_TENANT,
    private readonly ownsConnection = true,
  ) {
    const conn = new TenantConnection(db, tenant);
    this.conn = conn;
    this.watchedLogs = new WatchedLogs(conn);
    this.seen = new SeenEntries(conn);
    this.outbox = new Outbox(conn);
    this.deadLetters = new DeadLetters(conn);
    this.journal = new Journal(conn);
    this.sinks = new SinkStates(conn);
    this.quarantine = new Quarantine(conn);
    this.rates = new RateEstimates(conn);
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
      const head = this.journal.headNow();
      for (const entry of req.entries) {
        const performedAt = performedAtMs(entry);
        if (!this.seen.add(req.log, req.objectId, entry.id, performedAt, req.now)) {
          duplicates++;
          continue;
        }
        const placed = { seq: head + emitted + 1, log: req.log, objectId: req.objectId, performedAt, now: req.now };
        if (this.outbox.append(req.toEvent(entry), placed)) {
          emitted++;
          if (performedAt !== null) emittedPerformedAt.push(performedAt);
        } else duplicates++;
      }
      if (emitted > 0) this.journal.moveHead(head + emitted);
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

  get location(): string {
    return this.db.name;
  }

  get isOpen(): boolean {
    return this.open && this.db.open;
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
    return this.conn.statement<[string, string], { value: string }>(GET_META).get(this.tenant, key)?.value;
  }

  async setMeta(key: string, value: string): Promise<void> {
    this.conn.statement(SET_META).run(this.tenant, key, value);
  }

  async journalSize(): Promise<number> {
    return this.conn.statement<[string], { n: number }>(JOURNAL_SIZE).get(this.tenant)?.n ?? 0;
  }

  async close(): Promise<void> {
    this.open = false;
    if (this.ownsConnection && this.db.open) this.db.close();
  }
}
