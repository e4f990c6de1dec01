import type pg from 'pg';
import { AbortedError, ConfigError } from '../errors.js';
import { PEM_FILE_MAX_BYTES, PlainFileError, readPlainFile } from '../readPlainFile.js';
import { readSecretFile } from '../secrets/readSecretFile.js';
import { registerSecret, scrubSecrets } from '../secrets/secretRegistry.js';
import type { PostgresSinkConfig } from './postgresSinkConfig.js';
import { insertParameters, tableSql } from './postgresTable.js';
import type { OutboundEvent, Sink } from '../sinkContract/sink.js';
import { settleWithin, throwIfAborted, waitWithin } from './deadline.js';
import { SinkUnavailableError, throwIfAnyFailed, type ItemFailure } from '../sinkContract/sinkErrors.js';
import { loadClientPackage } from './brokerConnection.js';

/**
 * SQLSTATEs that say the connection or the server cannot take writes now, rather than that the
 * batch is wrong: class 08 (connection exception), admin/crash shutdown and "cannot connect now"
 * (57P01-57P03), too many connections (53300), and a read-only standby after a failover (25006).
 */
const UNAVAILABLE_STATE = /^(08...|57P0[123]|53300|25006)$/;

/** Longest wait for a lock on the table when creating it or its indexes (lock_timeout). */
const SCHEMA_LOCK_WAIT_MS = 3_000;

/**
 * Writes each batch as one multi-row INSERT (one statement, one transaction) into a table keyed by
 * (tenant, id), through `pg`. `ON CONFLICT DO NOTHING` makes a re-sent batch harmless, so the
 * table holds each event exactly once.
 */
export class PostgresSink implements Sink {
  readonly type = 'postgres';
  readonly name: string;
  // Each write takes its own pooled connection, so writes of different objects run in parallel.
  readonly limits = { maxBatchSize: 1000, maxInFlight: 4, defaultInFlight: 2 };
  private pool: pg.Pool | undefined;
  /** The pg package, loaded by the first connect: a process without a postgres sink never loads it. */
  private driver: typeof pg | undefined;
  private lastError: string | undefined;
  private readonly sql: ReturnType<typeof tableSql>;
  private readonly poolConfig: pg.PoolConfig;
  /** The server, for messages: no credentials. */
  private readonly server: string;

  constructor(private readonly config: PostgresSinkConfig) {
    this.name = config.name;
    const url = new URL(config.url);
    if (url.password) registerSecret(decodeURIComponent(url.password));
    const password = config.passwordFile ? readSecretFile(config.passwordFile) : undefined;
    if (password) registerSecret(password);
    this.server = `${url.host}${url.pathname}`;
    checkSslFiles(config.name, url);
    this.sql = tableSql(config.table);
    this.poolConfig = {
      connectionString: config.url,
      ...(password === undefined ? {} : { password }),
      max: this.limits.maxInFlight,
      connectionTimeoutMillis: config.connectTimeoutMs,
      idleTimeoutMillis: 60_000,
      keepAlive: true,
      application_name: `changefeed-${config.name}`.slice(0, 63),
    };
  }

  async connect(signal: AbortSignal): Promise<void> {
    if (this.pool) return;
    this.driver ??= (await loadClientPackage('pg', () => import('pg'))).default;
    const pool = new this.driver.Pool(this.poolConfig);
    // An idle connection that dies emits here; without a listener the process would crash.
    pool.on('error', (error) => {
      this.lastError = scrubSecrets(error.message);
    });
    try {
      const lease = await this.checkout(pool, signal);
      let healthy = false;
      try {
        // CREATE INDEX waits for every write in progress on the table, and every later write waits
        // behind it: a bounded wait fails this connect (retried) rather than stall the table.
        if (this.config.createTable) {
          await this.query(lease, `SET lock_timeout = ${SCHEMA_LOCK_WAIT_MS}`, [], signal);
          for (const statement of this.sql.create) await this.query(lease, statement, [], signal);
        }
        await this.query(lease, this.sql.probe, [], signal);
        await this.checkEventKey(lease, signal);
        if (this.config.createTable) {
          for (const statement of this.sql.indexes) await this.query(lease, statement, [], signal);
          await this.query(lease, 'RESET lock_timeout', [], signal);
        }
        healthy = true;
      } finally {
        lease.release(!healthy);
      }
    } catch (error) {
      await endPool(pool);
      if (signal.aborted) throw error;
      throw new SinkUnavailableError(`cannot use ${this.sql.table} on PostgreSQL at ${this.server}: ${explain(error)}`);
    }
    this.pool = pool;
    this.lastError = undefined;
  }

  /**
   * Refuses a table made by hand on which a re-sent batch would land twice or drop another tenant's
   * event (see `eventKey` in postgresTable.ts); the sink does not add constraints to it.
   */
  private async checkEventKey(lease: Lease, signal: AbortSignal): Promise<void> {
    const [row] = await this.query<{ keyed: boolean; without_tenant: string | null }>(
      lease,
      this.sql.eventKey,
      [this.sql.table],
      signal,
    );
    if (row?.without_tenant)
      throw new UnusableTableError(
        `table ${this.sql.table} has a unique key without tenant (${row.without_tenant}): an event of one tenant ` +
          `with an id another tenant's event has would be dropped as a re-sent one; drop that key as the table's ` +
          'owner (the key on (tenant, id) is the one the sink needs)',
      );
    if (row?.keyed) return;
    throw new UnusableTableError(
      `table ${this.sql.table} has no primary key or unique index on (tenant, id), so a batch sent again ` +
        `would be written twice: run \`CREATE UNIQUE INDEX ON ${this.sql.table} (tenant, id)\` as its owner`,
    );
  }

  async write(batch: readonly OutboundEvent[], signal: AbortSignal): Promise<void> {
    const { pool, driver } = this;
    if (!pool || !driver)
      throw new SinkUnavailableError(
        `not connected to PostgreSQL at ${this.server}${this.lastError ? `: ${this.lastError}` : ''}`,
      );
    signal.throwIfAborted();
    const lease = await this.checkout(pool, signal).catch((error: unknown) => this.lost(pool, error, signal));
    let healthy = false;
    try {
      try {
        await this.query(lease, this.sql.insert, insertParameters(batch), signal);
        healthy = true;
        return;
      } catch (error) {
        if (signal.aborted || isConnectionError(driver, error)) this.lost(pool, error, signal);
        if (!isDataError(driver, error)) {
          healthy = true; // the statement failed alone and rolled back; the connection is fine
          throw new Error(`INSERT into ${this.sql.table} failed: ${explain(error)}`);
        }
      }
      // One or more events PostgreSQL cannot take: find them, and commit the rest.
      const failures = await this.writeOneByOne(driver, lease, batch, signal).catch((error: unknown) => {
        if (signal.aborted || isConnectionError(driver, error)) return this.lost(pool, error, signal);
        throw new Error(`INSERT into ${this.sql.table} failed: ${explain(error)}`);
      });
      healthy = true;
      throwIfAnyFailed(failures, batch.length, `PostgreSQL at ${this.server}`);
    } finally {
      lease.release(!healthy);
    }
  }

  async close(): Promise<void> {
    const pool = this.pool;
    this.pool = undefined;
    if (pool) await endPool(pool);
  }

  /**
   * A batch PostgreSQL refused with a data or constraint error: each event in its own savepoint of
   * one transaction, so the events that fit are committed and those that do not are named. Events
   * after a refused one of the same object are held back, keeping each object's order.
   */
  private async writeOneByOne(
    driver: typeof pg,
    lease: Lease,
    batch: readonly OutboundEvent[],
    signal: AbortSignal,
  ): Promise<Map<string, ItemFailure>> {
    const failures = new Map<string, ItemFailure>();
    const blocked = new Set<string>();
    let written = 0;
    await this.query(lease, 'BEGIN', [], signal);
    for (const event of batch) {
      if (blocked.has(event.orderingKey)) continue;
      await this.query(lease, 'SAVEPOINT one_event', [], signal);
      try {
        await this.query(lease, this.sql.insert, insertParameters([event]), signal);
        await this.query(lease, 'RELEASE SAVEPOINT one_event', [], signal);
        written++;
      } catch (error) {
        if (signal.aborted || !isDataError(driver, error)) throw error;
        await this.query(lease, 'ROLLBACK TO SAVEPOINT one_event', [], signal);
        blocked.add(event.orderingKey);
        const state = (error as pg.DatabaseError).code ?? '';
        failures.set(event.id, { error: `${state} ${explain(error)}`, permanent: neverFits(state) });
      }
    }
    await this.query(lease, 'COMMIT', [], signal);
    // A constraint (class 23) refusing every event is more likely the table's fault than the events'.
    if (written > 0) for (const failure of failures.values()) failure.permanent = true;
    return failures;
  }

  private async checkout(pool: pg.Pool, signal: AbortSignal): Promise<Lease> {
    const checkout = pool.connect();
    const { connectTimeoutMs } = this.config;
    try {
      const client = await waitWithin(checkout, {
        what: `connecting to PostgreSQL at ${this.server}`,
        signal,
        timeoutMs: connectTimeoutMs,
        onTimeout: () => new Error(`no answer within ${connectTimeoutMs} ms`),
      });
      return new Lease(client);
    } catch (error) {
      // A connection that arrives after the wait was given up goes back to the pool, closed.
      checkout.then((late) => late.release(true)).catch(() => undefined);
      throw error;
    }
  }

  /**
   * One query, bounded by timeoutMs and the signal. When the wait is given up the connection is
   * destroyed: the server rolls back what it was doing, and no later query queues behind it. A
   * query that failed on its own leaves it be.
   */
  private async query<R extends pg.QueryResultRow>(
    lease: Lease,
    text: string,
    values: unknown[],
    signal: AbortSignal,
  ): Promise<R[]> {
    const { timeoutMs } = this.config;
    const timedOut = new Error(`no answer within ${timeoutMs} ms`);
    try {
      const what = `a query on PostgreSQL at ${this.server}`;
      const result = await waitWithin(lease.client.query<R>(text, values), {
        what,
        signal,
        timeoutMs,
        onTimeout: () => timedOut,
      });
      return result.rows;
    } catch (error) {
      if (error === timedOut || error instanceof AbortedError) lease.release(error as Error);
      throw error;
    }
  }

  /** The connection failed under a write: drop the pool so the engine reconnects. */
  private lost(pool: pg.Pool, error: unknown, signal: AbortSignal): never {
    throwIfAborted(signal, `write to PostgreSQL at ${this.server}`);
    if (this.pool === pool) this.pool = undefined;
    endPool(pool).catch(() => undefined);
    throw new SinkUnavailableError(`connection to PostgreSQL at ${this.server} failed: ${explain(error)}`);
  }
}

/**
 * TLS files named in the URL (libpq's `sslrootcert`, `sslcert`, `sslkey`), read by pg at every
 * connect: one that cannot be read would fail each reconnect for ever with a bare ENOENT, so it
 * stops `check` and `run` at start instead, naming the parameter.
 */
function checkSslFiles(name: string, url: URL): void {
  for (const parameter of ['sslrootcert', 'sslcert', 'sslkey']) {
    const file = url.searchParams.get(parameter);
    // `system` is libpq's word for the system's CA store, not a file.
    if (file === null || file === '' || (parameter === 'sslrootcert' && file === 'system')) continue;
    try {
      readPlainFile(file, PEM_FILE_MAX_BYTES);
    } catch (error) {
      if (!(error instanceof PlainFileError)) throw error;
      const reason = error.brief;
      throw new ConfigError(`sinks "${name}": ${parameter}=${file} in url cannot be read (${reason})`, [
        { path: 'url', message: reason },
      ]);
    }
  }
}

function isConnectionError(driver: typeof pg, error: unknown): boolean {
  const code = (error as { code?: string }).code ?? '';
  return !(error instanceof driver.DatabaseError) || UNAVAILABLE_STATE.test(code) || code === '';
}

/** Class 22 (data exception), 23 (constraint violation), 54000 (too large for an index row): the event, not the server. */
function isDataError(driver: typeof pg, error: unknown): boolean {
  return error instanceof driver.DatabaseError && /^(2[23]|54000$)/.test(error.code ?? '');
}

/** A value PostgreSQL can never hold (class 22: a \u0000 in jsonb, a bad timestamp; or 54000): no retry helps. */
function neverFits(state: string): boolean {
  return state.startsWith('22') || state === '54000';
}

/** The table lacks a key on the event, and the sink does not add one: the message says the statement to run. */
class UnusableTableError extends Error {}

const STATE_HINTS: Record<string, string> = {
  '28P01': 'check the user and password',
  '28000': 'check the user and password',
  '42P01': 'the table is missing: create it or set createTable: true',
  '42703': 'the table lacks a column the sink writes: see docs/sinks.md for its columns',
  '55P03':
    'the table is in use (a long query or an open transaction holds it): the sink tries again at its next connect',
  '42501': 'the role lacks a privilege (INSERT on the table, or CREATE when createTable is on)',
};

function explain(error: unknown): string {
  if (error instanceof UnusableTableError) return error.message;
  const e = error as { message?: string; code?: string };
  const hint = STATE_HINTS[e.code ?? ''];
  return `${scrubSecrets(e.message ?? String(error))}${hint ? `; ${hint}` : ''}`;
}

/** A pooled connection, given back once: a timed-out query destroys it before the write's own cleanup runs. */
class Lease {
  private released = false;
  /** A connection lost between queries emits here; the next query fails and says so. */
  private readonly ignore = () => undefined;

  constructor(readonly client: pg.PoolClient) {
    client.on('error', this.ignore);
  }

  /** Back to the pool, or closed when `destroy` (a connection in an unknown state). */
  release(destroy: boolean | Error): void {
    if (this.released) return;
    this.released = true;
    this.client.off('error', this.ignore);
    this.client.release(destroy === false ? undefined : destroy);
  }
}

/** Ends the pool without waiting more than a few seconds for connections that went silent. */
async function endPool(pool: pg.Pool): Promise<void> {
  await settleWithin(pool.end(), { timeoutMs: 5_000 }).catch(() => undefined);
}
