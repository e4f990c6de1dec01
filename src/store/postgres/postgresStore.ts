import { performedAtMs } from '../../api/activityEntry.js';
import type { ChangefeedStore } from '../changefeedStore.js';
import type { StoreHealth } from '../storeHealth.js';
import { decideIngest, eventToAppend, journalIdOf, type IngestFacts } from '../ingestDecision.js';
import { quarantineFingerprint } from '../storedRows.js';
import type { DeferredState, IngestRequest, IngestResult } from '../storeRecords.js';
import type { StoreActivity } from '../storeActivity.js';
import { AdvanceBatch } from './advanceBatch.js';
import { PostgresDeadLetters } from './deadLetters.js';
import type { PoolGate } from './poolGate.js';
import { PostgresDeferredState } from './deferredState.js';
import type { RequeueCounts } from '../requeueCounts.js';
import { PostgresJournal } from './journal.js';
import { outboxCountsRead, PostgresOutbox, type NewEvent } from './outbox.js';
import { PostgresQuarantine } from './quarantine.js';
import { PostgresRateEstimates } from './rateEstimates.js';
import { PostgresSeenEntries, seenEntriesRead, storedEntryId } from './seenEntries.js';
import { PostgresSinkStates, sinkListRead } from './sinkStates.js';
import type { Query, TenantDb } from './tenantDb.js';
import { PostgresWatchedLogs, watchedLogCoverageRead, watchedLogListRead } from './watchedLogs.js';

/** What decideIngest is told for a read of nothing: there is nothing to ask about. */
const NO_FACTS: IngestFacts = { seen: new Set(), journaled: new Set(), quarantinedBefore: new Set() };

/** A read with no entry, no entry out of its window and nothing quarantined: it writes its cursor alone. */
function readNothing(req: IngestRequest): boolean {
  return req.entries.length === 0 && (req.silentEntries?.length ?? 0) === 0 && (req.quarantined?.length ?? 0) === 0;
}

/**
 * The reads the tenants of one backend share, each one statement for the tenants asking in one
 * turn (BatchedRead), and their read-nothing polls' advances, batched the same way. Per backend,
 * since each pool has its own schema.
 */
export function sharedTenantReads(gate: PoolGate, activity: StoreActivity) {
  return {
    sinks: sinkListRead(),
    counts: outboxCountsRead(),
    watchedLogs: watchedLogListRead(),
    coverage: watchedLogCoverageRead(),
    seen: seenEntriesRead(),
    advances: new AdvanceBatch(gate, activity),
  };
}

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
  private readonly deferred: PostgresDeferredState;

  constructor(
    private readonly db: TenantDb,
    requeueCounts: RequeueCounts,
    shared: ReturnType<typeof sharedTenantReads>,
  ) {
    this.watchedLogs = new PostgresWatchedLogs(db, shared.watchedLogs, shared.coverage, shared.advances);
    this.seen = new PostgresSeenEntries(db, shared.seen);
    this.outbox = new PostgresOutbox(db, shared.counts);
    this.deadLetters = new PostgresDeadLetters(db, requeueCounts);
    this.journal = new PostgresJournal(db);
    this.sinks = new PostgresSinkStates(db, shared.sinks);
    this.quarantine = new PostgresQuarantine(db);
    this.rates = new PostgresRateEstimates(db);
    this.deferred = new PostgresDeferredState(db, this.rates);
    db.carry(this.deferred);
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
   * page: the facts in one query, then decideIngest, then its writes. The first statement of a
   * read with entries locks the tenant's `journal_heads` row until commit: ingests of a tenant run
   * one at a time, so the facts hold until the writes, and each draws its seqs only once the
   * previous one committed, so a tenant's seqs grow in commit order and the head a reader sees
   * never has an uncommitted seq below it.
   */
  async ingest(req: IngestRequest): Promise<IngestResult> {
    const { log, objectId, now } = req;
    if (readNothing(req)) {
      // Most polls: nothing to record but the cursor, one statement that checks the lease itself.
      await this.watchedLogs.advanceAlone({
        log,
        objectId,
        windowEnd: req.windowEnd,
        now,
        pruneSeenBefore: req.pruneSeenBefore,
        sortOrder: req.sortOrder,
      });
      return decideIngest(req, NO_FACTS).result;
    }
    return this.db.transaction(async (query) => {
      const decision = decideIngest(req, await this.ingestFacts(query, req));
      // Writes nobody reads back: they go with COMMIT, one round trip (Query.later).
      this.quarantine.add(query, log, objectId, decision.quarantine, now);
      this.seen.add(query, { log, objectId, entries: decision.recordSeen, now });
      const events = decision.emit.map((entry): NewEvent => {
        const event = eventToAppend(req, entry);
        return {
          eventId: event.id,
          type: event.type,
          performedAt: performedAtMs(entry),
          payload: JSON.stringify(event),
        };
      });
      this.outbox.append(query, events, { log, objectId, now });
      this.watchedLogs.advance(query, {
        log,
        objectId,
        windowEnd: req.windowEnd,
        ingested: decision.result.emitted,
        now,
        pruneSeenBefore: req.pruneSeenBefore,
        sortOrder: req.sortOrder,
      });
      return decision.result;
    });
  }

  /**
   * What decideIngest asks of the store about the read, after the tenant's `journal_heads` row
   * lock: a statement of its own, since a statement's snapshot is taken before any lock it waits
   * for, so facts read in the same statement could miss the ingest it waited for. A read of
   * nothing (most polls) never gets here (readNothing): it appends no event, so it draws no seq.
   */
  private async ingestFacts(query: Query, req: IngestRequest): Promise<IngestFacts> {
    const ids = [...(req.silentEntries ?? []), ...req.entries].map((e) => e.id);
    const fingerprints = (req.quarantined ?? []).map(quarantineFingerprint);
    // Sent with the facts' statement, in one round trip; each takes its own snapshot (Query.later).
    query.later(
      `INSERT INTO journal_heads (tenant, head) VALUES ($1, 0)
       ON CONFLICT (tenant) DO UPDATE SET head = journal_heads.head`,
      [this.db.tenant],
    );
    const { rows } = await query<{ seen: string[]; journaled: string[]; quarantined: string[] }>(
      `SELECT
         ARRAY(SELECT entry_id FROM seen_entries
               WHERE tenant = $1 AND log = $2 AND object_id = $3 AND entry_id = ANY($4::text[])) AS seen,
         ARRAY(SELECT event_id FROM events WHERE tenant = $1 AND event_id = ANY($5::text[])) AS journaled,
         ARRAY(SELECT fingerprint FROM quarantine
               WHERE tenant = $1 AND log = $2 AND object_id = $3 AND fingerprint = ANY($6::text[])) AS quarantined`,
      [
        this.db.tenant,
        req.log,
        req.objectId,
        ids.map(storedEntryId),
        req.entries.map((e) => journalIdOf(req, e)),
        fingerprints,
      ],
    );
    const facts = rows[0] ?? { seen: [], journaled: [], quarantined: [] };
    const seen = new Set(facts.seen);
    return {
      seen: new Set(ids.filter((id) => seen.has(storedEntryId(id)))),
      journaled: new Set(facts.journaled),
      quarantinedBefore: new Set(facts.quarantined),
    };
  }

  deferState(state: DeferredState): void {
    this.deferred.add(state);
  }

  flushDeferred(): Promise<void> {
    return this.deferred.flush();
  }

  running(): void {
    this.db.running();
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
