import pg from 'pg';
import { ChangefeedError } from '../../errors.js';
import { readSecretFile } from '../../secrets/readSecretFile.js';
import { redactUrlCredentials, withUrlPassword } from '../../secrets/urlCredentials.js';
import { registerSecret } from '../../secrets/secretRegistry.js';
import { TenantRecordTable } from '../../cluster/tenantRecordTable.js';
import { StoreActivity } from '../storeActivity.js';
import type { OpenStoreOptions, StoreBackend, TenantStoreOptions } from '../storeBackend.js';
import type { StoreLocation } from '../storeLocation.js';
import { CONNECTION_LIMIT_ADVICE, StoreUnavailableError } from '../storeHealth.js';
import { checkExistingSchema } from './existingSchema.js';
import { migrate } from './migrate.js';
import { readOnlySession } from './connectionFailure.js';
import { isRetryableOpenError } from './openFailure.js';
import { PostgresChangefeedStore, sharedTenantReads } from './postgresStore.js';
import { RequeueCounts } from '../requeueCounts.js';
import { StoreError } from '../storeError.js';
import { TenantDb } from './tenantDb.js';
import { PoolGate } from './poolGate.js';
import { MAX_PREPARED_STATEMENTS, StatementNames } from './statementNames.js';

/** What the backend needs of `store` in the config. */
type PostgresLocation = Omit<Extract<StoreLocation, { kind: 'postgres' }>, 'kind'>;

export interface PostgresBackendOptions extends OpenStoreOptions {
  /** How long to wait for a connection (default 10 s). */
  connectTimeoutMs?: number;
  /**
   * How long a checkout waits for a connection of a full pool before it gives up with STORE_BUSY
   * (default POOL_WAIT_LIMIT_MS).
   */
  poolWaitMs?: number;
  /** The server cancels a statement running longer (default 30 s): a hung database pauses, never hangs, the daemon. */
  statementTimeoutMs?: number;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * int8 (BIGINT, COUNT(*)) as a JS number rather than node-postgres's default string, so every
 * record has numbers exactly as the SQLite store gives them. Seqs, counts and millisecond times
 * stay far below 2^53. Set on this pool only: the postgres sink's pools keep the defaults.
 */
const INT8_OID = 20;
const parseInt8 = (value: string): number => Number(value);
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary'): unknown =>
    oid === INT8_OID && format !== 'binary'
      ? parseInt8
      : (pg.types.getTypeParser(oid, format) as unknown)) as typeof pg.types.getTypeParser,
};

/**
 * The store of a deployment in PostgreSQL: one pool per process for all its tenants, the tables
 * in one schema (search_path), each tenant's rows told apart by a `tenant` column. Why the `pg`
 * driver: docs/scaling.md.
 */
export class PostgresStoreBackend implements StoreBackend {
  readonly sharedByReplicas = this;
  readonly activity = new StoreActivity('postgres');
  private closing: Promise<void> | undefined;
  private readonly requeueCounts = new RequeueCounts();
  private readonly sharedReads: ReturnType<typeof sharedTenantReads>;
  /** The way into `pool` of every tenant's statements and of the tenant records. */
  readonly gate: PoolGate;

  private constructor(
    /** The pool of the tenants' queries, shared by all tenants of this replica (through `gate`). */
    readonly pool: pg.Pool,
    /**
     * The tenant leases' own connections (LEASE_CONNECTIONS), in the same schema: renewals queued
     * behind the tenants' queries in the shared pool would arrive late under load, and a replica
     * would lose its leases to its own local deadline (docs/scaling.md).
     */
    readonly leasePool: pg.Pool,
    readonly location: string,
    readonly schema: string,
    gate: { slots: number; waitMs: number; prepared: boolean },
  ) {
    const names = new StatementNames(gate.prepared ? MAX_PREPARED_STATEMENTS : 0);
    this.gate = new PoolGate(pool, gate.slots, gate.waitMs, this.activity, location, names);
    this.activity.poolWaiting = () => this.gate.waiting;
    this.sharedReads = sharedTenantReads(this.gate, this.activity);
  }

  /**
   * Connects, creates the schema if missing and migrates it (with `readonly` or `mustExist`, only
   * an existing store: checkExistingSchema). When it cannot: STORE_UNAVAILABLE
   * if waiting may help (the database is down, starting up, out of reach; isRetryableOpenError),
   * which a daemon retries; STORE_ERROR otherwise, naming what to fix.
   */
  static async open(configured: PostgresLocation, options: PostgresBackendOptions = {}): Promise<PostgresStoreBackend> {
    const shown = redactUrlCredentials(configured.url);
    const location = { ...configured, url: connectionUrl(configured, shown) };
    // node-postgres throws a bare "Invalid URL" TypeError from its constructors: say which setting.
    if (!URL.canParse(location.url))
      throw new StoreError(
        `store.url ${shown} is not a valid URL; write postgres://user:password@host:port/database ` +
          '(percent-encode special characters of the password)',
      );
    if (!SCHEMA_NAME.test(location.schema))
      throw new StoreError(`store.schema "${location.schema}" is not a lower-case SQL identifier`);
    // node-postgres lets the URL's parameters win over the pool's: an `options` there would
    // replace the search_path that points every query at the schema.
    const url = new URL(location.url);
    if (url.searchParams.has('options'))
      throw new StoreError(
        `store.url ${shown} sets options, which the store needs for its schema; set store.schema instead`,
      );
    const password = passwordOf(url);
    if (password) registerSecret(password);
    const statementTimeout = options.statementTimeoutMs ?? 30_000;
    const applicationName = options.applicationName ?? 'changefeed';
    const poolOf = (max: number): pg.Pool =>
      new pg.Pool({
        connectionString: location.url,
        max,
        connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
        idleTimeoutMillis: 30_000,
        keepAlive: true,
        keepAliveInitialDelayMillis: 10_000,
        application_name: applicationName.slice(0, 63),
        statement_timeout: statementTimeout,
        // A server that stops answering altogether (a network partition) is given up on too.
        query_timeout: statementTimeout + 10_000,
        // A transaction left open by a stalled process releases the tenant's head lock.
        idle_in_transaction_session_timeout: options.idleInTransactionTimeoutMs ?? 60_000,
        options: `-c search_path=${location.schema}${options.readonly ? ' -c default_transaction_read_only=on' : ''}`,
        types,
      });
    const pool = poolOf(location.maxConnections);
    const leasePool = poolOf(LEASE_CONNECTIONS);
    // An idle connection that drops (a server restart) errors here; the next query reconnects.
    pool.on('error', () => undefined);
    leasePool.on('error', () => undefined);
    // Migrations run on a connection of their own without the pool's timeouts: a replica waits
    // for another's migration as long as it takes, and a long one is not cancelled halfway.
    const migrator = new pg.Client({
      connectionString: location.url,
      connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
      application_name: `${applicationName}-migrate`.slice(0, 63),
      keepAlive: true,
    });
    migrator.on('error', () => undefined);
    try {
      await migrator.connect();
      const readonly = options.readonly ?? false;
      if (readonly || options.mustExist)
        await checkExistingSchema(migrator, { schema: location.schema, shown }, { readonly });
      if (!readonly) await migrate(migrator, location.schema, shown);
      await migrator.end();
    } catch (error) {
      await migrator.end().catch(() => undefined);
      await endPool(pool);
      await endPool(leasePool);
      // Ours already say what to do (a newer or a development build's schema).
      if (error instanceof ChangefeedError) throw error;
      const reason = (error as Error).message;
      // The database is up and answers: pointing at store.url would send the operator astray.
      if ((error as { code?: unknown }).code === '53300')
        throw new StoreUnavailableError(
          `PostgreSQL at ${shown} (schema ${location.schema}) refuses more connections: ${reason}; ` +
            CONNECTION_LIMIT_ADVICE,
          error,
        );
      // Reached, but read-only: "unreachable, check that the database is up" sent the operator
      // looking for an outage that was not there.
      if (readOnlySession(error))
        throw new StoreUnavailableError(
          `PostgreSQL at ${shown} (schema ${location.schema}) is read-only: ${reason}; point store.url at the ` +
            'primary (a standby after a failover) or lift default_transaction_read_only on the database or role',
          error,
        );
      if (isRetryableOpenError(error))
        throw new StoreUnavailableError(
          `PostgreSQL at ${shown} (schema ${location.schema}) is unreachable: ${reason}; check store.url and that ` +
            'the database is up',
          error,
        );
      throw new StoreError(
        `cannot open the store at ${shown} (schema ${location.schema}): ${reason}; check store.url`,
        error,
      );
    }
    return new PostgresStoreBackend(pool, leasePool, shown, location.schema, {
      slots: location.maxConnections,
      prepared: location.preparedStatements ?? true,
      waitMs: options.poolWaitMs ?? POOL_WAIT_LIMIT_MS,
    });
  }

  /** The store of one tenant; its writes check `fence` first when one is given. */
  tenantStore(tenant: string, options: TenantStoreOptions = {}): Promise<PostgresChangefeedStore> {
    return Promise.resolve(
      new PostgresChangefeedStore(
        new TenantDb(this.gate, tenant, this.location, options.fence, this.activity),
        this.requeueCounts,
        this.sharedReads,
      ),
    );
  }

  /** Shared by every replica of the schema (changefeed_tenant_records). */
  tenantRecords(): TenantRecordTable {
    return new TenantRecordTable(this.gate);
  }

  async close(): Promise<void> {
    this.closing ??= Promise.all([endPool(this.pool), endPool(this.leasePool)]).then(() => undefined);
    await this.closing;
  }
}

/**
 * The URL the pools connect with: with `passwordFile`, the file's password put into the URL, as
 * node-postgres lets a connection string's fields win over the pool's own. Registered as a
 * secret before anything can log it.
 */
export function connectionUrl(location: PostgresLocation, shown: string): string {
  if (location.passwordFile === undefined) return location.url;
  const password = readSecretFile(location.passwordFile);
  registerSecret(password);
  if (!URL.canParse(location.url))
    throw new StoreError(
      `store.url ${shown} is not a valid URL; write postgres://user@host:port/database ` +
        '(percent-encode special characters of the user)',
    );
  if (new URL(location.url).password !== '')
    throw new StoreError(`store.url ${shown} carries a password and store.passwordFile another: keep one`);
  return withUrlPassword(location.url, password);
}

function passwordOf(url: URL): string | undefined {
  try {
    return url.password ? decodeURIComponent(url.password) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * How long a tenant's statement waits for a connection of a full pool before STORE_BUSY. The
 * waits are the back-pressure of a replica asking more than its connections carry; this bound
 * only turns a pool that stays full for good (every connection held by statements that do not
 * end) into an error that says so. A statement runs at most 30 s (statement_timeout).
 */
export const POOL_WAIT_LIMIT_MS = 60_000;

/** Connections of the lease pool: a round's queries run one after another, and one spare. */
export const LEASE_CONNECTIONS = 2;

/** Ends the pool without waiting more than a few seconds for connections that went silent. */
async function endPool(pool: pg.Pool): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, 5_000)));
  await Promise.race([pool.end().catch(() => undefined), timeout]);
  clearTimeout(timer);
}
