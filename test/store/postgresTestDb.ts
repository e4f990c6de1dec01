import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { ChangefeedStore } from '../../src/store/changefeedStore.js';
import { T } from './contract/storeFixtures.js';
import { PostgresStoreBackend, type PostgresBackendOptions } from '../../src/store/postgres/postgresStoreBackend.js';
import { closeAfterTest } from '../support/closeAfterTest.js';
import { connectPostgres, dropSchema, POSTGRES_URL } from '../support/postgresAdmin.js';

/**
 * The test database for the PostgreSQL store tests, connected once per worker: the files that
 * import this module share it (isolate: false in vitest.config.ts), and Vitest ends the worker
 * when the run is done. Without one they are skipped with the reason printed, unless CI is set:
 * then the file fails, loudly.
 */
const connected = await connectPostgres();
export const admin: pg.Client | undefined = 'client' in connected ? connected.client : undefined;
if (!admin) {
  const reason = 'reason' in connected ? connected.reason : 'no PostgreSQL';
  if (process.env.CI) throw new Error(`${reason} (CI is set: database tests must not be skipped)`);
  console.warn(`skipping PostgreSQL store tests: ${reason}`);
}

/** What the running test opened here, closed after it, the last first (a backend before its schema). */
const cleanups: (() => Promise<unknown>)[] = [];
function cleanUpAfterTest(cleanup: () => Promise<unknown>): void {
  if (cleanups.length === 0)
    closeAfterTest(async () => {
      for (const each of cleanups.splice(0).reverse()) await each();
    });
  cleanups.push(cleanup);
}

/** A schema name of its own for one test, dropped with everything in it after the test. */
export function freshSchema(): string {
  const schema = `cf_test_${randomBytes(6).toString('hex')}`;
  cleanUpAfterTest(() => dropSchema(admin!, schema));
  return schema;
}

/** A backend on `schema` (a fresh one by default), closed after the test. */
export async function openBackend(
  schema = freshSchema(),
  options: PostgresBackendOptions & { url?: string; preparedStatements?: boolean } = {},
): Promise<PostgresStoreBackend> {
  const backend = await PostgresStoreBackend.open(
    { url: options.url ?? POSTGRES_URL, schema, maxConnections: 4, preparedStatements: options.preparedStatements },
    options,
  );
  cleanUpAfterTest(() => backend.close());
  return backend;
}

/** Sink `a` active and the career log c-1 watched, as the contract suite's stores start. */
export async function prepare(store: ChangefeedStore): Promise<void> {
  await store.sinks.activate([{ name: 'a', type: 'file' }], T);
  await store.watchedLogs.registerAll([{ log: 'career', objectId: 'c-1', origin: 'config', coverageStart: T, now: T }]);
}

/**
 * The pid of a session that waits for a lock `blocker`'s session holds, once one does
 * (pg_blocking_pids): never another test's, though the files running side by side share the
 * database, and a test that cancels or ends it reaches only its own. Gives up when `settled`
 * says the awaited work ended without having waited.
 */
export async function waiterBehind(blocker: pg.ClientBase, settled: () => boolean = () => false): Promise<number> {
  const { rows } = await blocker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const blockerPid = rows[0]!.pid;
  for (;;) {
    const waiting = await admin!.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE $1::int = ANY (pg_blocking_pids(pid))',
      [blockerPid],
    );
    if (waiting.rows[0]) return waiting.rows[0].pid;
    if (settled()) throw new Error(`nothing waited behind session ${blockerPid}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}
