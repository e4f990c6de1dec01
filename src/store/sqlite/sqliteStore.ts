import { performedAtMs } from '../../api/activityEntry.js';
import type { ChangefeedStore } from '../changefeedStore.js';
import { decideIngest, eventToAppend, journalIdOf } from '../ingestDecision.js';
import { quarantineFingerprint } from '../storedRows.js';
import {
  DEFERRED_STATE_FLUSH_MS,
  type DeferredState,
  type IngestRequest,
  type IngestResult,
  type RateEstimateRow,
} from '../storeRecords.js';
import type { Db } from './database.js';
import { DeadLetters } from './deadLetters.js';
import type { RequeueCounts } from '../requeueCounts.js';
import { Journal } from './journal.js';
import { Outbox } from './outbox.js';
import { Quarantine } from './quarantine.js';
import { StoreHealth, StoreUnavailableError } from '../storeHealth.js';
import { SeenEntries } from './seenEntries.js';
import { RateEstimates } from './rateEstimates.js';
import { SinkStates } from './sinkStates.js';
import { WatchedLogs, type watchedLogCoverageRead } from './watchedLogs.js';
import { TenantConnection } from './tenantConnection.js';

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
  readonly journal: Journal;
  readonly sinks: SinkStates;
  readonly quarantine: Quarantine;
  readonly rates: RateEstimates;
  readonly health = new StoreHealth();
  private readonly ingestTx;

  private readonly conn: TenantConnection;
  private open = true;
  /** Deferred state not written yet (deferState): learned rates by log, meta values by key; the last wins. */
  private unwrittenRates = new Map<string, RateEstimateRow>();
  private unwrittenMeta = new Map<string, string>();
  private flushTimer: NodeJS.Timeout | undefined;

  /** `db` and the rest are the backend's, shared by its tenants; closing a tenant's store leaves them open. */
  constructor(
    readonly db: Db,
    readonly tenant: string,
    requeueCounts: RequeueCounts,
    coverageRead: ReturnType<typeof watchedLogCoverageRead>,
  ) {
    const conn = new TenantConnection(db, tenant);
    this.conn = conn;
    this.watchedLogs = new WatchedLogs(conn, coverageRead);
    this.seen = new SeenEntries(conn);
    this.outbox = new Outbox(conn);
    this.deadLetters = new DeadLetters(conn, requeueCounts);
    this.journal = new Journal(conn);
    this.sinks = new SinkStates(conn);
    this.quarantine = new Quarantine(conn);
    this.rates = new RateEstimates(conn);
    // The facts first, then decideIngest, then its writes: one rule for both engines.
    this.ingestTx = db.transaction((req: IngestRequest): IngestResult => {
      const { log, objectId, now } = req;
      const decision = decideIngest(req, {
        seen: this.seen.among(
          log,
          objectId,
          [...(req.silentEntries ?? []), ...req.entries].map((e) => e.id),
        ),
        journaled: this.outbox.journaled(req.entries.map((e) => journalIdOf(req, e))),
        quarantinedBefore: this.quarantine.known(log, objectId, (req.quarantined ?? []).map(quarantineFingerprint)),
      });
      for (const entry of decision.quarantine) this.quarantine.add(log, objectId, entry, now);
      for (const entry of decision.recordSeen) this.seen.add(log, objectId, entry.id, performedAtMs(entry), now);
      const { emitted } = decision.result;
      if (emitted > 0) {
        const head = this.journal.headNow();
        decision.emit.forEach((entry, i) => {
          const placed = { seq: head + i + 1, log, objectId, performedAt: performedAtMs(entry), now };
          this.outbox.append(eventToAppend(req, entry), placed);
        });
        this.journal.moveHead(head + emitted);
      }
      this.watchedLogs.advance({
        log,
        objectId,
        windowEnd: req.windowEnd,
        ingested: emitted,
        now,
        sortOrder: req.sortOrder,
      });
      if (req.pruneSeenBefore !== undefined) this.seen.prune(log, objectId, req.pruneSeenBefore);
      this.writeDeferredNow();
      return decision.result;
    });
  }

  get location(): string {
    return this.db.name;
  }

  get isOpen(): boolean {
    return this.open && this.db.open;
  }

  async ingest(request: IngestRequest): Promise<IngestResult> {
    try {
      this.conn.countTransaction();
      const result = this.ingestTx(request);
      this.deferredWritten();
      this.health.clear();
      return result;
    } catch (error) {
      if (!this.health.record(error, this.db.name)) throw error;
      throw new StoreUnavailableError(this.health.problem ?? 'the store cannot be written', error);
    }
  }

  /**
   * Held for the tenant's next ingest, which writes it in its transaction (a poll is then one
   * commit, not two), or written in a transaction of its own after DEFERRED_STATE_FLUSH_MS
   * without one. What the disk refuses waits for the next ingest or flush; health says why.
   */
  deferState(state: DeferredState): void {
    for (const row of state.rates ?? []) this.unwrittenRates.set(`${row.log}\u0000${row.objectId}`, row);
    for (const [key, value] of Object.entries(state.meta ?? {})) this.unwrittenMeta.set(key, value);
    if (this.flushTimer !== undefined || !this.deferredWaiting) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      try {
        this.writeDeferred();
      } catch (error) {
        // Its one error route: kept for the next ingest or flush, which report what refuses it.
        this.health.record(error, this.db.name);
      }
    }, DEFERRED_STATE_FLUSH_MS);
    this.flushTimer.unref();
  }

  async flushDeferred(): Promise<void> {
    this.writeDeferred();
  }

  private get deferredWaiting(): boolean {
    return this.unwrittenRates.size > 0 || this.unwrittenMeta.size > 0;
  }

  private writeDeferred(): void {
    if (!this.deferredWaiting) return;
    this.conn.transaction(() => this.writeDeferredNow());
    this.deferredWritten();
  }

  /** The held state, in the caller's transaction: forgotten only once that commits (deferredWritten). */
  private writeDeferredNow(): void {
    for (const row of this.unwrittenRates.values()) this.rates.save(row);
    for (const [key, value] of this.unwrittenMeta) this.conn.statement(SET_META).run(this.tenant, key, value);
  }

  private deferredWritten(): void {
    this.unwrittenRates.clear();
    this.unwrittenMeta.clear();
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
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
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
  }
}
