import type pg from 'pg';
import type { StoreActivity } from '../storeActivity.js';
import { StoreBusyError } from '../storeHealth.js';
import { isConnectionFailure } from './connectionFailure.js';

/**
 * Which queue a checkout waits in: `start` (a tenant starting: its first reads and writes, each a
 * statement in a row) goes ahead of `run` (the running tenants' polls, deliveries and scrapes).
 */
export type PoolLane = 'start' | 'run';

interface Waiter {
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
  readonly since: number;
  timer: NodeJS.Timeout | undefined;
  /** Given the slot or given up: a waiter left in its queue is skipped when its turn comes. */
  settled: boolean;
}

/** A first-in first-out queue whose head moves rather than shifting the array each time. */
class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  push(item: T): void {
    this.items.push(item);
  }

  shift(): T | undefined {
    if (this.head === this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }
}

/**
 * The one way into the store's pool: at most `slots` (the pool's size) checkouts out at once, the
 * others waiting here, `start` before `run`, each at most `waitLimitMs`. node-postgres's pool
 * raises the same "timeout exceeded when trying to connect" for a checkout that waited behind a
 * full pool as for a connect that failed, and the store must tell a busy pool (back-pressure:
 * STORE_BUSY, wait a little) from an unreachable database (an outage: STORE_UNAVAILABLE, pause).
 * As the pool is never asked for more connections than it has, its connect timeout only ever
 * bounds a real connect; a wait here that runs out is STORE_BUSY, unless the checkouts' last
 * word on the database is that it cannot be reached: then the waiter is given that failure.
 */
export class PoolGate {
  private inUse = 0;
  private queued = 0;
  private readonly lanes: Record<PoolLane, Fifo<Waiter>> = { start: new Fifo(), run: new Fifo() };
  /**
   * The connection failure the last checkout to end met (a connect that failed or timed out, a
   * statement cut off), until one ends well. A database gone silent holds every connection
   * until the driver gives up on it (query_timeout, 40 s by default), and the checkouts queued
   * meanwhile are the outage's, not back-pressure: told STORE_BUSY, they were not recorded and
   * paused a second, so most tenants of a replica never showed the outage.
   */
  private unreachable: Error | undefined;

  constructor(
    private readonly pool: pg.Pool,
    /** The pool's `max`. */
    readonly slots: number,
    private readonly waitLimitMs: number,
    /** Counts the waits (the backend's, shared by its tenants). */
    private readonly activity: StoreActivity,
    /** The database, as shown in errors (credentials redacted). */
    private readonly location: string,
  ) {}

  /** Checkouts waiting for a connection now. */
  get waiting(): number {
    return this.queued;
  }

  /** A connection of the pool; its `release` gives the slot to the next checkout waiting. */
  async connect(lane: PoolLane = 'run'): Promise<pg.PoolClient> {
    await this.enter(lane);
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      this.ended(error);
      this.leave();
      throw error;
    }
    // node-postgres gives each checkout a `release` of its own and throws on a second call, so
    // the slot is left once, after the connection went back (or was destroyed).
    const release = client.release.bind(client);
    client.release = (err?: Error | boolean): void => {
      release(err);
      // A connection given back whole ended well; one destroyed says why (TenantDb passes a
      // connection failure as `err`).
      this.ended(err instanceof Error ? err : undefined);
      this.leave();
    };
    return client;
  }

  /** One statement on a connection of the pool (node-postgres checks it out and back). */
  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    sql: string,
    params?: readonly unknown[],
    lane: PoolLane = 'run',
  ): Promise<pg.QueryResult<R>> {
    await this.enter(lane);
    try {
      const result = await this.pool.query<R>(sql, params as unknown[]);
      this.ended(undefined);
      return result;
    } catch (error) {
      this.ended(error);
      throw error;
    } finally {
      this.leave();
    }
  }

  /** Notes how a checkout ended: a connection failure, or the database answered (an SQL error too). */
  private ended(error: unknown): void {
    this.unreachable = isConnectionFailure(error) ? (error as Error) : undefined;
  }

  private enter(lane: PoolLane): Promise<void> {
    if (this.inUse < this.slots && this.queued === 0) {
      this.inUse++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { resolve, reject, since: performance.now(), timer: undefined, settled: false };
      waiter.timer = setTimeout(() => this.giveUp(waiter), this.waitLimitMs);
      this.lanes[lane].push(waiter);
      this.queued++;
    });
  }

  private giveUp(waiter: Waiter): void {
    if (waiter.settled) return;
    waiter.settled = true;
    this.queued--;
    this.activity.poolWaits++;
    this.activity.poolWaitSeconds += (performance.now() - waiter.since) / 1000;
    if (this.unreachable) {
      waiter.reject(this.unreachable);
      return;
    }
    this.activity.poolBusy++;
    waiter.reject(
      new StoreBusyError(
        `every connection to the database ${this.location} stayed in use for ${this.waitLimitMs} ms ` +
          `(store.maxConnections ${this.slots}, ${this.queued} more waiting); the work is tried again shortly`,
      ),
    );
  }

  /** The slot goes straight to the next waiter (a start first), or back to the gate. */
  private leave(): void {
    const next = this.nextWaiter();
    if (next === undefined) {
      this.inUse--;
      return;
    }
    next.settled = true;
    clearTimeout(next.timer);
    this.queued--;
    this.activity.poolWaits++;
    this.activity.poolWaitSeconds += (performance.now() - next.since) / 1000;
    next.resolve();
  }

  private nextWaiter(): Waiter | undefined {
    if (this.queued === 0) return undefined;
    for (const lane of [this.lanes.start, this.lanes.run])
      for (let w = lane.shift(); w !== undefined; w = lane.shift()) if (!w.settled) return w;
    return undefined;
  }
}
