import type pg from 'pg';
import {
  claimParams,
  leaseHeldCte,
  leaseNow,
  lostInDatabase,
  type LeaseClaim,
  type LeaseNow,
  type WriteFence,
} from '../../cluster/writeFence.js';
import { simpleQueryResults } from '../../simpleQueryResults.js';
import type { StoreActivity } from '../storeActivity.js';
import type { RateEstimateRow } from '../storeRecords.js';
import { databaseProblem, isStoreBusy, StoreBusyError, StoreHealth, StoreUnavailableError } from '../storeHealth.js';
import { endedSession, isConnectionFailure, isLoginRefused, readOnlySession } from './connectionFailure.js';
import type { PoolGate, PoolLane } from './poolGate.js';
import type { AdvanceBatch, AdvanceOutcome, BatchedAdvance } from './advanceBatch.js';
import { executeOnClient } from './executeText.js';
import { isStalePlan, isUnknownStatement, isUnusableStatement } from './statementNames.js';

/** SQLSTATE of a statement cancelled by its statement_timeout (query_canceled). */
const STATEMENT_TIMEOUT_SQLSTATE = '57014';

function isStatementTimeout(error: unknown): boolean {
  return (error as { code?: unknown } | undefined)?.code === STATEMENT_TIMEOUT_SQLSTATE;
}

/** Runs one statement of an open transaction. */
export type Query = (<R extends pg.QueryResultRow = pg.QueryResultRow>(
  sql: string,
  params?: readonly unknown[],
) => Promise<pg.QueryResult<R>>) & {
  /**
   * A write of the transaction whose result nobody reads: sent with the transaction's next round
   * trip (the next statement, or COMMIT), in the order given. Its failure fails that round trip,
   * and so the transaction, as it would have failed its own. `read`, if given, is handed its result
   * once it ran, which may be after COMMIT: it must only note it, and the caller judge it once the
   * transaction ended.
   */
  later(sql: string, params: readonly unknown[], read?: (result: pg.QueryResult) => void): void;
};

/** Writes that wait to ride in the tenant's next write transaction (PostgresDeferredState). */
export interface RidingWrites {
  readonly waiting: boolean;
  /** Writes with `query` (Query.later: with COMMIT); the transaction then says how it ended. */
  write(query: Query): RiddenTransaction;
  /** The writes as rows, for a statement of many tenants (AdvanceBatch); it then says how it ended. */
  take(): { rates: RateEstimateRow[]; meta: [string, string][]; ridden: RiddenTransaction };
}

/** How the transaction that carried riding writes ended. */
export interface RiddenTransaction {
  committed(): void;
  /** Rolled back with `error` (what the caller of the transaction is thrown): the writes wait for the next one. */
  rolledBack(error: unknown): void;
  /** Never sent (AdvanceBatch's `busy`): the writes, and whoever awaits them, wait for the next one. */
  returned(): void;
}

/**
 * A transaction failed by a stale prepared statement (isStalePlan), to be tried again unnamed, or
 * by an EXECUTE of a name the server does not know (isUnknownStatement), to be tried again
 * without (StatementNames.executable is off by then, for a while).
 */
class TryAgain extends Error {
  constructor(
    cause: unknown,
    readonly unnamed: boolean,
  ) {
    super('a prepared statement went stale under a schema change, or is not known by its name', { cause });
  }
}

/**
 * One tenant's way into the shared pool: every facet of a PostgreSQL store reads and writes
 * through it. It keeps the rules of the store in one place:
 * - Every write is a transaction whose first statement is the fence check (when the store has a
 *   fence), sent with its BEGIN in one round trip: a replica that lost the tenant's lease writes
 *   nothing, not even half a batch. Each statement of a fenced transaction runs under the fence's
 *   statement timeout, so the lease row's lock it holds is never held long.
 * - A database that cannot serve (away, full, read-only, too slow, refusing the role's login)
 *   becomes StoreUnavailableError with `health.problem` saying why, as a full disk does for
 *   SQLite; a successful write clears it.
 * - A connection that failed mid-transaction is destroyed, not given back to the pool in an
 *   unknown state.
 * - Every statement with parameters is prepared once per connection, under a name its text
 *   decides (StatementNames): PostgreSQL parses and plans it once, not on every execution.
 * Every checkout goes through the backend's PoolGate: in its `start` lane until the tenant runs
 * (running()), so a tenant starting does not wait behind every running tenant's polls once per
 * statement; a wait the gate gives up on is STORE_BUSY, never recorded as the store's problem.
 */
export class TenantDb {
  readonly health = new StoreHealth();
  private riding: RidingWrites | undefined;
  private lane: PoolLane = 'start';

  constructor(
    private readonly pool: PoolGate,
    readonly tenant: string,
    readonly location: string,
    private readonly fence: WriteFence | undefined,
    /** Counts every transaction and statement sent (the backend's, shared by its tenants). */
    private readonly activity: StoreActivity,
  ) {}

  /** Not yet running: its checkouts go in the gate's `start` lane. */
  get starting(): boolean {
    return this.lane === 'start';
  }

  /** The tenant runs: its checkouts queue behind those of tenants starting. */
  running(): void {
    this.lane = 'run';
  }

  /** `writes` go with every write transaction of the tenant from now on, after its fence check. */
  carry(writes: RidingWrites): void {
    this.riding = writes;
  }

  /** One read statement, outside any transaction (each statement sees committed data only). */
  async read<R extends pg.QueryResultRow>(sql: string, params: readonly unknown[]): Promise<R[]> {
    try {
      return await this.readUnrecorded<R>(sql, params);
    } catch (error) {
      throw this.failure(error);
    }
  }

  /**
   * `read` whose failure is thrown as it came, recorded nowhere: for a statement asked on behalf
   * of many tenants (BatchedRead), each of which records it with `failure`.
   */
  async readUnrecorded<R extends pg.QueryResultRow>(sql: string, params: readonly unknown[]): Promise<R[]> {
    this.activity.statementAlone();
    return (await this.pool.query<R>(sql, params, this.lane)).rows;
  }

  /**
   * One write statement. Without a fence it runs alone (PostgreSQL makes a statement atomic);
   * with one, or with writes waiting to ride along, it is wrapped in a transaction (the fence first).
   */
  async writeOne<R extends pg.QueryResultRow>(sql: string, params: readonly unknown[]): Promise<pg.QueryResult<R>> {
    if (this.fence || this.riding?.waiting) return this.transaction((query) => query<R>(sql, params));
    try {
      this.activity.statementAlone();
      const result = await this.pool.query<R>(sql, params, this.lane);
      this.health.clear();
      return result;
    } catch (error) {
      throw this.failure(error);
    }
  }

  /**
   * One write statement that checks the tenant's lease in its own text: one round trip where a
   * fenced transaction is three (docs/leases.md). `sql(lease)` is the statement given the text of a
   * CTE named `lease` (leaseHeldCte, its parameters after `params`): it must write nothing unless
   * `lease` has its row, and return one row whose `held` says whether it had; one not held throws
   * LeaseLostError, as a fence check would. Sent with `SET LOCAL statement_timeout` as one simple
   * query (one implicit transaction: the bound and the lease row's lock end with the statement).
   * Not prepared on the connection yet, with writes waiting to ride, or without `fence.inline`:
   * as `writeOne` (which prepares it).
   */
  async writeFencedAlone(
    sql: (lease: string) => string,
    params: readonly (string | number | null | readonly number[])[],
  ): Promise<void> {
    const fence = this.fence;
    const inline = fence?.inline;
    if (!fence || !inline) {
      await this.writeOne(sql('lease AS (SELECT)'), params);
      return;
    }
    inline.refuseLocally();
    const text = sql(leaseHeldCte(params.length + 1));
    const values = [...params, ...claimParams(inline.claim)];
    // The transaction's fence check holds the lease row already: the statement goes with COMMIT.
    // Its own check of the lease still decides whether it wrote (the lease can run out on the
    // database clock between the fence check and the statement), and a statement that did not
    // write is LEASE_LOST here as on one round trip, not a success that wrote nothing.
    const inTransaction = async (): Promise<void> => {
      let held = false;
      await this.transaction((query) => {
        query.later(text, values, (result) => {
          held = (result.rows[0] as { held?: boolean } | undefined)?.held === true;
        });
        return Promise.resolve();
      });
      if (!held) throw lostInDatabase(inline.claim);
    };
    if (this.riding?.waiting) return inTransaction();
    const { name } = this.pool.names.statement(text, values);
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect(this.lane);
    } catch (error) {
      throw this.failure(error);
    }
    const execute =
      name === undefined ? undefined : executeOnClient(client, this.pool.names.executable, name, text, values);
    if (execute === undefined) {
      client.release();
      return inTransaction();
    }
    const ignore = (): void => undefined;
    client.on('error', ignore);
    const bound = Math.max(1, Math.floor(fence.statementTimeoutMs));
    let answer: pg.QueryResult<{ held?: boolean }>;
    this.activity.statementAlone();
    try {
      answer = await client.query(`SET LOCAL statement_timeout = ${bound}; ${execute}`);
    } catch (error) {
      // The implicit transaction rolled back on its own. A connection that failed, that the server
      // ended (FATAL: no ROLLBACK goes here to tell it, as in `attempt`), or that cannot run the
      // statement by its name (isUnusableStatement) is destroyed; the latter is tried again in a
      // transaction, unnamed there if stale, not by its name in a simple query if unknown.
      const again = isUnusableStatement(error);
      if (isUnknownStatement(error)) this.pool.names.unknownStatement();
      let broken =
        isConnectionFailure(error) || endedSession(error) || readOnlySession(error) || again
          ? (error as Error)
          : undefined;
      let thrown: unknown;
      if (broken === undefined && isStatementTimeout(error))
        ({ thrown, broken } = await this.timedOutFence(client, inline.claim, error));
      client.off('error', ignore);
      client.release(broken);
      if (again) return inTransaction();
      throw thrown ?? this.failure(error);
    }
    client.off('error', ignore);
    client.release();
    if (simpleQueryResults(answer).at(-1)?.rows[0]?.held !== true) throw lostInDatabase(inline.claim);
    this.health.clear();
  }

  /**
   * A read-nothing poll's cursor write, with the deferred state waiting to ride, in the backend's
   * AdvanceBatch. False (nothing sent) when the write must go alone: without `fence.inline`, or
   * AdvanceBatch's `busy` or `alone`. A lost lease is LeaseLostError and a failure is recorded in
   * this tenant's health, as for a write of its own; either way the riding state is held again.
   */
  async advanceInBatch(
    batch: AdvanceBatch,
    advance: Omit<BatchedAdvance, 'claim' | 'statementTimeoutMs' | 'riding'>,
  ): Promise<boolean> {
    const inline = this.fence?.inline;
    if (!this.fence || !inline) return false;
    inline.refuseLocally();
    const taken = this.riding?.waiting ? this.riding.take() : undefined;
    let outcome: AdvanceOutcome;
    try {
      outcome = await batch.write({
        ...advance,
        claim: inline.claim,
        statementTimeoutMs: this.fence.statementTimeoutMs,
        ...(taken ? { riding: { rates: taken.rates, meta: taken.meta } } : {}),
      });
    } catch (error) {
      const thrown = this.failure(error);
      taken?.ridden.rolledBack(thrown);
      throw thrown;
    }
    if (outcome === 'busy' || outcome === 'alone') {
      taken?.ridden.returned();
      return false;
    }
    if (outcome === 'lost') {
      const lost = lostInDatabase(inline.claim);
      taken?.ridden.rolledBack(lost);
      throw lost;
    }
    taken?.ridden.committed();
    this.health.clear();
    return true;
  }

  /**
   * `work` in one transaction on one connection, after the fence check, with the writes waiting to
   * ride along; rolled back if anything throws (the riding writes then wait for the next one).
   * Failed by an unusable prepared statement (isUnusableStatement), it is tried once more, so a
   * migration under a running daemon costs no write and no error.
   */
  async transaction<T>(work: (query: Query) => Promise<T>): Promise<T> {
    try {
      return await this.attempt(work, true);
    } catch (error) {
      if (!(error instanceof TryAgain)) throw error;
      try {
        return await this.attempt(work, !error.unnamed);
      } catch (again) {
        // Once only: a second unknown name (a pooler that reset every connection) fails this write.
        if (again instanceof TryAgain) throw this.failure(again.cause);
        throw again;
      }
    }
  }

  /** One try of `transaction`, its statements prepared under their names or not (`prepared`). */
  private async attempt<T>(work: (query: Query) => Promise<T>, prepared: boolean): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect(this.lane);
    } catch (error) {
      throw this.failure(error);
    }
    // A connection that drops between statements emits here; the next statement fails and says so.
    const ignore = (): void => undefined;
    client.on('error', ignore);
    let broken: Error | undefined;
    let carried: RiddenTransaction | undefined;
    // Past the fence check, the transaction holds the lease row: a timeout after is the write's own.
    let fenced = false;
    const activity = this.activity;
    activity.transactions++;
    const sendAlone = <R extends pg.QueryResultRow>(
      sql: string,
      params?: readonly unknown[],
    ): Promise<pg.QueryResult<R>> => {
      activity.statements++;
      return client.query<R>(
        prepared ? this.pool.names.statement(sql, params) : { text: sql, values: params as unknown[] | undefined },
      );
    };
    // `later` writes go with the next statement as one simple query of EXECUTEs when each is
    // prepared on this connection, else each alone first (which prepares it here). Each statement
    // of a simple query takes its own snapshot, as it would sent alone.
    let queued: { sql: string; params: readonly unknown[]; read?: (result: pg.QueryResult) => void }[] = [];
    const sendQueued = async <R extends pg.QueryResultRow>(sql: string, params?: readonly unknown[]) => {
      const batch = queued;
      queued = [];
      const texts = batch.map((statement) => this.inlined(client, prepared, statement.sql, statement.params));
      const last = params === undefined ? sql : this.inlined(client, prepared, sql, params);
      if (last === undefined || texts.some((text) => text === undefined)) {
        for (const statement of batch) {
          const result = await sendAlone(statement.sql, statement.params);
          statement.read?.(result);
        }
        return sendAlone<R>(sql, params);
      }
      activity.statements++;
      const each = simpleQueryResults(await client.query<R>([...texts, last].join('; ')));
      batch.forEach((statement, i) => statement.read?.(each[i]!));
      return each.at(-1) as pg.QueryResult<R>;
    };
    const send = Object.assign(
      <R extends pg.QueryResultRow>(sql: string, params?: readonly unknown[]): Promise<pg.QueryResult<R>> =>
        queued.length > 0 ? sendQueued<R>(sql, params) : sendAlone<R>(sql, params),
      {
        later: (sql: string, params: readonly unknown[], read?: (result: pg.QueryResult) => void): void => {
          queued.push({ sql, params, read });
        },
      },
    );
    try {
      const timeoutMs = this.fence?.statementTimeoutMs;
      const bound = timeoutMs === undefined ? undefined : Math.max(1, Math.floor(timeoutMs));
      // One round trip: BEGIN, the bounds of the transaction (SET LOCAL: for it alone) and the
      // fence check. A fenced transaction holds its lease row's lock: neither a statement nor a
      // pause of this process between two statements (SIGSTOP, a long GC) may hold it past the bound.
      const begin =
        bound === undefined
          ? 'BEGIN'
          : `BEGIN; SET LOCAL statement_timeout = ${bound}; SET LOCAL idle_in_transaction_session_timeout = ${bound}`;
      if (this.fence) {
        activity.statements++;
        await this.fence.check(client, begin);
        fenced = true;
      } else {
        await send(begin);
      }
      const result = await work(send);
      if (this.riding?.waiting) carried = this.riding.write(send);
      await send('COMMIT');
      carried?.committed();
      this.health.clear();
      return result;
    } catch (error) {
      // A connection that failed itself is destroyed, not asked to roll back (that would wait out
      // another timeout; the server rolls back on its own); so is one holding a stale or unknown
      // prepared statement, which would fail there for good, and a read-only session (readOnlySession).
      queued = [];
      const unknown = prepared && isUnknownStatement(error);
      if (isConnectionFailure(error) || isUnusableStatement(error) || readOnlySession(error)) broken = error as Error;
      else
        await sendAlone('ROLLBACK').catch((rollbackError: unknown) => {
          broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
        });
      // Tried again (a stale plan comes from `work`: the riding writes return no rows, COMMIT is unnamed).
      if (prepared && isStalePlan(error)) {
        carried?.rolledBack(error);
        throw new TryAgain(error, true);
      }
      if (unknown) {
        this.pool.names.unknownStatement();
        carried?.rolledBack(error);
        throw new TryAgain(error, false);
      }
      const claim = this.fence?.inline?.claim;
      let thrown: unknown;
      if (claim && !fenced && broken === undefined && isStatementTimeout(error))
        ({ thrown, broken } = await this.timedOutFence(client, claim, error));
      else thrown = this.failure(error);
      carried?.rolledBack(thrown);
      throw thrown;
    } finally {
      client.off('error', ignore);
      client.release(broken);
    }
  }

  /**
   * `sql` with `params` as an EXECUTE of the statement prepared under its name on `client`, for a
   * simple query of several (executeText); undefined when it is not prepared there yet (node-postgres
   * records each statement a connection parsed), not named, or not to be prepared (`prepared`).
   */
  private inlined(
    client: pg.PoolClient,
    prepared: boolean,
    sql: string,
    params: readonly unknown[],
  ): string | undefined {
    if (!prepared) return undefined;
    const { name } = this.pool.names.statement(sql, params);
    return name === undefined ? undefined : executeOnClient(client, this.pool.names.executable, name, sql, params);
  }

  /**
   * What a fenced write whose lease check ran out the fence's bound is thrown, asked of the lease
   * row on the same connection without waiting (docs/leases.md): no longer valid, LEASE_LOST; valid
   * but locked, STORE_BUSY (neither is the database's problem); valid and free, or a check that
   * fails, the write's own failure (the connection destroyed if it failed itself).
   */
  private async timedOutFence(
    client: pg.PoolClient,
    claim: LeaseClaim,
    error: unknown,
  ): Promise<{ thrown: unknown; broken: Error | undefined }> {
    let now: LeaseNow;
    try {
      this.activity.statementAlone();
      now = await leaseNow(client, claim, this.fence?.statementTimeoutMs ?? 1);
    } catch (checkError) {
      const broken = isConnectionFailure(checkError) || endedSession(checkError) ? (checkError as Error) : undefined;
      return { thrown: this.failure(error), broken };
    }
    if (now === 'lost') return { thrown: lostInDatabase(claim), broken: undefined };
    if (now === 'held') return { thrown: this.failure(error), broken: undefined };
    this.activity.leaseRowBusy++;
    return {
      thrown: new StoreBusyError(
        `the lease row of tenant "${claim.tenant}" stayed locked by another transaction (a change of holder ` +
          `under way) past the write's bound of ${this.fence?.statementTimeoutMs ?? 0} ms; the write was not made ` +
          'and is tried again shortly',
      ),
      broken: undefined,
    };
  }

  /** The error to throw for `error`: StoreUnavailableError (recorded in health) when the database cannot serve. */
  failure(error: unknown): unknown {
    // Back-pressure of the gate, phrased already: not the database's failure.
    if (isStoreBusy(error)) return error;
    const unavailable =
      isConnectionFailure(error) || isLoginRefused(error)
        ? new StoreUnavailableError(
            databaseProblem(this.location, (error as Error).message, (error as { code?: unknown }).code),
            error,
          )
        : error;
    if (!this.health.record(unavailable, this.location)) return error;
    if (unavailable instanceof StoreUnavailableError) return unavailable;
    return new StoreUnavailableError(this.health.problem ?? `the database ${this.location} cannot serve`, error);
  }
}
