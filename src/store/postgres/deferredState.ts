import { errorCodeOf } from '../../errors.js';
import { DEFERRED_STATE_FLUSH_MS, type DeferredState, type RateEstimateRow } from '../storeRecords.js';
import type { PostgresRateEstimates } from './rateEstimates.js';
import type { Query, RiddenTransaction, RidingWrites, TenantDb } from './tenantDb.js';

/** A flush waiting for the transaction that carries the state it asked for. */
interface Waiter {
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * One tenant's deferred state (ChangefeedStore.deferState) on PostgreSQL: held here, then written
 * by TenantDb inside the tenant's next write transaction, after its fence check, in at most two
 * statements. A poll then costs its ingest transaction alone instead of one more for its learned
 * rate and, every half minute, two for the meta values (docs/scaling.md).
 */
export class PostgresDeferredState implements RidingWrites {
  private rates = new Map<string, RateEstimateRow>();
  private meta = new Map<string, string>();
  private waiters: Waiter[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: TenantDb,
    private readonly rateEstimates: PostgresRateEstimates,
  ) {}

  get waiting(): boolean {
    return this.rates.size > 0 || this.meta.size > 0;
  }

  add(state: DeferredState): void {
    for (const row of state.rates ?? []) this.rates.set(`${row.log}\u0000${row.objectId}`, row);
    for (const [key, value] of Object.entries(state.meta ?? {})) this.meta.set(key, value);
    if (this.waiting) this.flushLater();
  }

  /**
   * Writes what is held in the caller's transaction and lets go of it; should that transaction
   * not commit, it is held again, under anything added since.
   */
  async write(query: Query): Promise<RiddenTransaction> {
    const [rates, meta, waiters] = [this.rates, this.meta, this.waiters];
    this.rates = new Map();
    this.meta = new Map();
    this.waiters = [];
    // What is added from now on waits its own DEFERRED_STATE_FLUSH_MS: a timer left running
    // flushed each poll's rate on its own every half minute, though the next poll carried it.
    clearTimeout(this.timer);
    this.timer = undefined;
    const ridden: RiddenTransaction = {
      committed: () => {
        for (const waiter of waiters) waiter.resolve();
      },
      rolledBack: (error) => {
        this.rates = new Map([...rates, ...this.rates]);
        this.meta = new Map([...meta, ...this.meta]);
        for (const waiter of waiters) waiter.reject(error);
        if (this.waiting) this.flushLater();
      },
    };
    try {
      if (rates.size > 0) await this.rateEstimates.saveIn(query, [...rates.values()]);
      if (meta.size > 0)
        await query(
          `INSERT INTO meta (tenant, key, value)
           SELECT $1, u.key, u.value FROM unnest($2::text[], $3::text[]) AS u (key, value)
           ON CONFLICT (tenant, key) DO UPDATE SET value = excluded.value`,
          [this.db.tenant, [...meta.keys()], [...meta.values()]],
        );
    } catch (error) {
      ridden.rolledBack(error);
      throw error;
    }
    return ridden;
  }

  /**
   * Writes what is held now, in a transaction of its own unless one of the tenant's under way
   * takes it first; resolves once it is committed, rejects with the error of the one that failed.
   */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.waiting) return;
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
      });
    }, DEFERRED_STATE_FLUSH_MS);
    this.timer.unref();
  }
}
