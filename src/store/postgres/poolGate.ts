import PQueue from 'p-queue';
import type pg from 'pg';
import type { StoreActivity } from '../storeActivity.js';
import { StoreBusyError } from '../storeHealth.js';
import { isConnectionFailure } from './connectionFailure.js';
import { isUnusableStatement, type StatementNames } from './statementNames.js';

/**
 * Which queue a checkout waits in: `start` (a tenant starting: its first reads and writes, each a
 * statement in a row) goes ahead of `run` (the running tenants' polls, deliveries and scrapes).
 */
export type PoolLane = 'start' | 'run';

/**
 * The one way into the store's pool: at most `slots` (the pool's size) checkouts out at once, the
 * others waiting here, `start` before `run`, each at most `waitLimitMs`. node-postgres's pool
 * raises the same error for a checkout that waited behind a full pool as for a connect that
 * failed; waiting here, the pool's connect timeout bounds only real connects, and a wait that runs
 * out is STORE_BUSY (back-pressure), unless the last checkout met the database unreachable.
 */
export class PoolGate {
  /** One task per checkout out, running until its connection goes back; a `start` has priority 1. */
  private readonly checkouts: PQueue;
  /**
   * The connection failure the last checkout to end met (a connect that failed or timed out, a
   * statement cut off), until one ends well. A database gone silent holds every connection until
   * the driver gives up on it (query_timeout, 40 s by default), and the checkouts queued meanwhile
   * are the outage's, not back-pressure: told STORE_BUSY, they would not show the outage.
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
    /** The names the pool's connections prepare statements under (every statement of the store passes here). */
    readonly names: StatementNames,
  ) {
    this.checkouts = new PQueue({ concurrency: slots });
  }

  get waiting(): number {
    return this.checkouts.size;
  }

  /** A connection of the pool; its `release` gives the slot to the next checkout waiting. */
  async connect(lane: PoolLane = 'run'): Promise<pg.PoolClient> {
    const leave = await this.enter(lane);
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      this.ended(error);
      leave();
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
      leave();
    };
    return client;
  }

  /**
   * One statement on a connection of the pool, prepared there under its name (`names`); one that
   * cannot serve there (isUnusableStatement) is sent once more unnamed (node-postgres destroys a
   * connection after any error), so a schema change under a running daemon fails no statement.
   */
  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    sql: string,
    params?: readonly unknown[],
    lane: PoolLane = 'run',
  ): Promise<pg.QueryResult<R>> {
    const leave = await this.enter(lane);
    try {
      const statement = this.names.statement(sql, params);
      const result = await this.pool.query<R>(statement).catch((error: unknown) => {
        if (statement.name === undefined || !isUnusableStatement(error)) throw error;
        return this.pool.query<R>({ text: sql, values: statement.values });
      });
      this.ended(undefined);
      return result;
    } catch (error) {
      this.ended(error);
      throw error;
    } finally {
      leave();
    }
  }

  /** Notes how a checkout ended: a connection failure, or the database answered (an SQL error too). */
  private ended(error: unknown): void {
    this.unreachable = isConnectionFailure(error) ? (error as Error) : undefined;
  }

  /**
   * Waits for a slot (at once while one is free and nobody waits) and resolves to the function that
   * gives it back. A checkout that must wait gives up after `waitLimitMs`; its timer is cleared
   * when its turn comes, since p-queue would free the slot of a task whose signal aborts while it
   * runs, and this task runs as long as its connection is out.
   */
  private enter(lane: PoolLane): Promise<() => void> {
    const since = performance.now();
    const waits = this.checkouts.pending >= this.slots || this.checkouts.size > 0;
    const giveUp = waits ? new AbortController() : undefined;
    const timer = giveUp && setTimeout(() => giveUp.abort(), this.waitLimitMs);
    return new Promise((resolve, reject) => {
      this.checkouts
        .add(
          () =>
            new Promise<void>((leave) => {
              clearTimeout(timer);
              if (waits) this.countWait(since);
              resolve(leave);
            }),
          { priority: lane === 'start' ? 1 : 0, signal: giveUp?.signal },
        )
        .catch((error: unknown) => reject(giveUp?.signal.aborted ? this.gaveUp(since) : (error as Error)));
    });
  }

  private countWait(since: number): void {
    this.activity.poolWaits++;
    this.activity.poolWaitSeconds += (performance.now() - since) / 1000;
  }

  /** What a checkout that waited `waitLimitMs` in vain is told. */
  private gaveUp(since: number): Error {
    this.countWait(since);
    if (this.unreachable) return this.unreachable;
    this.activity.poolBusy++;
    return new StoreBusyError(
      `every connection to the database ${this.location} stayed in use for ${this.waitLimitMs} ms ` +
        `(store.maxConnections ${this.slots}, ${this.checkouts.size} more waiting); the work is tried again shortly`,
    );
  }
}
