import { errorCodeOf } from '../../errors.js';
import { DEFERRED_STATE_FLUSH_MS, type DeferredState, type RateEstimateRow } from '../storeRecords.js';
import type { PostgresRateEstimates } from './rateEstimates.js';
import { storableText } from './storableText.js';
import type { Query, RiddenTransaction, RidingWrites, TenantDb } from './tenantDb.js';

/**
 * How long a learned rate is held before it rides in the tenant's next write transaction: riding
 * with the very next poll, every poll's transaction would be a round trip longer; held, the rates
 * of a tenant's polls meanwhile go in one upsert. Meta values ride at once. Below
 * DEFERRED_STATE_FLUSH_MS, so a tenant polling at all writes its rates with a poll.
 */
export const RATE_RIDE_AFTER_MS = 20_000;

/** A flush waiting for the transaction that carries the state it asked for. */
interface Waiter {
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * One tenant's deferred state (ChangefeedStore.deferState) on PostgreSQL: held here, then written
 * by TenantDb inside the tenant's next write transaction once it is due (a meta value at once,
 * learned rates after RATE_RIDE_AFTER_MS, everything when flushed), after its fence check, in at
 * most two statements. A poll then costs its ingest transaction alone instead of one more for its
 * learned rate and, every half minute, two for the meta values (docs/scaling.md).
 */
export class PostgresDeferredState implements RidingWrites {
  private rates = new Map<string, RateEstimateRow>();
  private meta = new Map<string, string>();
  private waiters: Waiter[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** What is held rides with the next write: set by a meta value, RATE_RIDE_AFTER_MS, a flush. */
  private due = false;
  private dueTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: TenantDb,
    private readonly rateEstimates: PostgresRateEstimates,
  ) {}

  /** Held and due: the tenant's next write transaction carries it. */
  get waiting(): boolean {
    return this.due && this.held;
  }

  private get held(): boolean {
    return this.rates.size > 0 || this.meta.size > 0;
  }

  add(state: DeferredState): void {
    for (const row of state.rates ?? []) this.rates.set(`${row.log}\u0000${row.objectId}`, row);
    for (const [key, value] of Object.entries(state.meta ?? {})) this.meta.set(key, value);
    if (!this.held) return;
    if (this.meta.size > 0) this.due = true;
    this.dueLater();
    this.flushLater();
  }

  /**
   * Writes what is held in the caller's transaction, with its COMMIT (Query.later), and lets go
   * of it; should that transaction not commit, it is held again, under anything added since.
   */
  write(query: Query): RiddenTransaction {
    const { rates, meta, ridden } = this.take();
    if (rates.length > 0) this.rateEstimates.saveIn(query, rates);
    if (meta.length > 0)
      query.later(
        `INSERT INTO meta (tenant, key, value)
         SELECT $1, u.key, u.value FROM unnest($2::text[], $3::text[]) AS u (key, value)
         ON CONFLICT (tenant, key) DO UPDATE SET value = excluded.value`,
        [this.db.tenant, meta.map(([key]) => storableText(key)), meta.map(([, value]) => storableText(value))],
      );
    return ridden;
  }

  /** What is held, let go of for a write that carries it (`write`, AdvanceBatch) and is told how it ended. */
  take(): { rates: RateEstimateRow[]; meta: [string, string][]; ridden: RiddenTransaction } {
    const [rates, meta, waiters] = [this.rates, this.meta, this.waiters];
    this.rates = new Map();
    this.meta = new Map();
    this.waiters = [];
    // What is added from now on waits its own DEFERRED_STATE_FLUSH_MS: a timer left running would
    // flush each poll's rate on its own, though the next poll carries it.
    clearTimeout(this.timer);
    this.timer = undefined;
    this.notDue();
    // Held again, under anything added since; it was due when taken, so the next write carries it.
    const holdAgain = (): void => {
      this.rates = new Map([...rates, ...this.rates]);
      this.meta = new Map([...meta, ...this.meta]);
      if (this.held) this.due = true;
    };
    const ridden: RiddenTransaction = {
      committed: () => {
        for (const waiter of waiters) waiter.resolve();
      },
      rolledBack: (error) => {
        holdAgain();
        for (const waiter of waiters) waiter.reject(error);
        // Or the flush, one timer later.
        if (this.held) this.flushLater();
      },
      returned: () => {
        holdAgain();
        this.waiters = [...waiters, ...this.waiters];
      },
    };
    return { rates: [...rates.values()], meta: [...meta.entries()], ridden };
  }

  /**
   * Writes what is held now, in a transaction of its own unless one of the tenant's under way
   * takes it first; resolves once it is committed, rejects with the error of the one that failed.
   */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.held) return;
    this.due = true;
    let waiter: Waiter | undefined;
    const written = new Promise<void>((resolve, reject) => {
      waiter = { resolve, reject };
      this.waiters.push(waiter);
    });
    // Handled below in every case; marked so a rejection before the await is not reported.
    written.catch(() => undefined);
    try {
      await this.db.transaction(() => Promise.resolve());
    } catch (error) {
      // Refused before it took the state (the fence, a connection): no other carries this flush.
      const index = this.waiters.indexOf(waiter as Waiter);
      if (index >= 0) {
        this.waiters.splice(index, 1);
        throw error;
      }
    }
    await written;
  }

  /**
   * A flush in DEFERRED_STATE_FLUSH_MS unless a write of the tenant takes the state first. Its one
   * error route: a refusal leaves the state held (health says why) for the next write or flush,
   * one timer later, never sooner; under a lost lease the state is dropped.
   */
  private flushLater(): void {
    if (this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush().catch((error: unknown) => {
        if (errorCodeOf(error) !== 'LEASE_LOST') return;
        this.rates.clear();
        this.meta.clear();
        clearTimeout(this.timer);
        this.timer = undefined;
        this.notDue();
      });
    }, DEFERRED_STATE_FLUSH_MS);
    this.timer.unref();
  }

  /** Due in RATE_RIDE_AFTER_MS, unless it is already or a write takes it first. */
  private dueLater(): void {
    if (this.due || this.dueTimer !== undefined) return;
    this.dueTimer = setTimeout(() => {
      this.dueTimer = undefined;
      this.due = true;
    }, RATE_RIDE_AFTER_MS);
    this.dueTimer.unref();
  }

  /** Taken by a write (or dropped): what is added next waits its own RATE_RIDE_AFTER_MS. */
  private notDue(): void {
    this.due = false;
    clearTimeout(this.dueTimer);
    this.dueTimer = undefined;
  }
}
