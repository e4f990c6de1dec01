import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { CLUSTER_SCHEMA_SQL } from '../../src/cluster/leaseSchema.js';
import { connectPostgres, dropSchema, POSTGRES_PORT } from './postgresAdmin.js';
import { skipOrFail } from './requiredBinary.js';

/**
 * A fresh schema holding the cluster's tables (leases, tenant records), for one test, and pools
 * whose connections see only it (search_path), so tests running in parallel never meet. `close`
 * ends the pools and drops the schema.
 */
export interface LeaseSchema {
  readonly name: string;
  /** The admin connection (no search_path): for looking at pg_stat_activity and the like. */
  readonly admin: pg.Client;
  /** A pool on the schema; `port` sends it through a proxy instead of to PostgreSQL directly. */
  pool(options?: { port?: number; max?: number; options?: string }): pg.Pool;
  /** A query on the schema, on a pool of the test's own (not one a keeper under test uses). */
  query<R extends pg.QueryResultRow>(sql: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
  close(): Promise<void>;
}

/** The admin connection, or undefined after printing why the tests skip (CI set: throws). */
export async function connectLeaseAdmin(what: string): Promise<pg.Client | undefined> {
  const connected = await connectPostgres();
  if ('client' in connected) return connected.client;
  skipOrFail(what, connected.reason);
  return undefined;
}

export async function createLeaseSchema(admin: pg.Client): Promise<LeaseSchema> {
  const name = `cf_test_${randomBytes(6).toString('hex')}`;
  await admin.query(`CREATE SCHEMA "${name}"`);
  const pools: pg.Pool[] = [];
  const pool = (options: { port?: number; max?: number; options?: string } = {}): pg.Pool => {
    const p = new pg.Pool({
      host: '127.0.0.1',
      port: options.port ?? POSTGRES_PORT,
      user: 'postgres',
      database: 'test',
      options: `-c search_path=${name}${options.options ? ` ${options.options}` : ''}`,
      max: options.max ?? 4,
      connectionTimeoutMillis: 2_000,
    });
    // A connection cut by a test (a proxy stopped, pg_terminate_backend) must not crash the run.
    p.on('error', () => undefined);
    pools.push(p);
    return p;
  };
  const direct = pool();
  await direct.query(CLUSTER_SCHEMA_SQL);
  return {
    name,
    admin,
    pool,
    query: (sql, values) => direct.query(sql, values),
    close: async () => {
      await Promise.all(pools.splice(0).map((p) => p.end().catch(() => undefined)));
      await dropSchema(admin, name);
    },
  };
}
