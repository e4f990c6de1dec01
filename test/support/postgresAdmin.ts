import pg from 'pg';

/** The PostgreSQL of this machine: trust auth on loopback, database `test`. */
export const POSTGRES_PORT = 5432;
export const POSTGRES_URL = `postgres://postgres@127.0.0.1:${POSTGRES_PORT}/test`;

/** A client of the test database, or why there is none (the caller skips, or fails under CI). */
export async function connectPostgres(): Promise<{ client: pg.Client } | { reason: string }> {
  const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 2_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return { client };
  } catch (error) {
    await client.end().catch(() => undefined);
    return { reason: `no PostgreSQL at 127.0.0.1:${POSTGRES_PORT} (database test): ${(error as Error).message}` };
  }
}

/**
 * A pool on the test database, for a file whose tests run concurrently: pg queues the queries of
 * one client sent while another is running, and warns that pg 9 will refuse them.
 */
export async function connectPostgresPool(): Promise<{ pool: pg.Pool } | { reason: string }> {
  // A checkout waits for a free one of the four connections, or for a new backend, as long as a
  // caller's own `until` allows: with 2 s, the replica tests' lease queries (five tests at once,
  // each starting two daemons) failed on "timeout exceeded when trying to connect" at load 13 to 30.
  // A PostgreSQL that is not there still refuses the first query at once.
  const pool = new pg.Pool({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 30_000, max: 4 });
  pool.on('error', () => undefined);
  try {
    await pool.query('SELECT 1');
    return { pool };
  } catch (error) {
    await pool.end().catch(() => undefined);
    return { reason: `no PostgreSQL at 127.0.0.1:${POSTGRES_PORT} (database test): ${(error as Error).message}` };
  }
}

/** Drops a schema a test created, with everything in it. */
export async function dropSchema(client: pg.Client | pg.Pool, schema: string): Promise<void> {
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
}
