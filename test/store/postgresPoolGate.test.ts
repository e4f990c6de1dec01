import { createServer, type Server, type Socket } from 'node:net';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { errorCodeOf } from '../../src/errors.js';
import { classifyPollFailure, STORE_BUSY_PAUSE_MS } from '../../src/poll/failurePolicy.js';
import { PoolGate } from '../../src/store/postgres/poolGate.js';
import { StatementNames } from '../../src/store/postgres/statementNames.js';
import type { PostgresStoreBackend } from '../../src/store/postgres/postgresStoreBackend.js';
import { TenantDb } from '../../src/store/postgres/tenantDb.js';
import { StoreActivity } from '../../src/store/storeActivity.js';
import { StoreBusyError } from '../../src/store/storeHealth.js';
import { admin, openBackend } from './postgresTestDb.js';

/** A transaction of `db` that holds its connection until `until` resolves. */
function holding(db: TenantDb, until: Promise<void>): Promise<void> {
  return db.transaction(async (query) => {
    await query('SELECT 1');
    await until;
  });
}

/** `n` tenants' ways into the backend's pool. */
function tenantDbs(backend: PostgresStoreBackend, n: number): TenantDb[] {
  return Array.from(
    { length: n },
    (_, i) => new TenantDb(backend.gate, `t${i}`, backend.location, undefined, backend.activity),
  );
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe.skipIf(!admin)('PostgreSQL store: a full pool is back-pressure, not an outage', () => {
  it('a statement that waited out a full pool fails with STORE_BUSY and leaves the store healthy', async () => {
    // node-postgres's own wait would give up after connectTimeoutMs with "timeout exceeded when
    // trying to connect", the message of a database that cannot be reached: with the gate in
    // front of it, its pool is never asked for more connections than it has.
    const backend = await openBackend(undefined, { connectTimeoutMs: 5_000, poolWaitMs: 200 });
    const dbs = tenantDbs(backend, 5);
    const release = deferred();
    const held = dbs.slice(0, 4).map((db) => holding(db, release.promise));
    const waited = await dbs[4]!.read('SELECT 1 AS one', []).then(
      () => undefined,
      (error: unknown) => error,
    );
    release.resolve();
    await Promise.all(held);
    expect(waited).toBeInstanceOf(StoreBusyError);
    expect(errorCodeOf(waited)).toBe('STORE_BUSY');
    expect((waited as Error).message).toMatch(/stayed in use for 200 ms \(store.maxConnections 4/);
    expect(dbs[4]!.health.problem).toBeUndefined();
    expect(backend.activity.poolBusy).toBe(1);
    expect(backend.activity.poolWaits).toBe(1);
    // Not the database's failure: the same tenant's next statement runs.
    expect(await dbs[4]!.read<{ one: number }>('SELECT 1 AS one', [])).toEqual([{ one: 1 }]);
    expect(backend.gate.waiting).toBe(0);
  });

  it('a statement waits for a connection longer than the connect timeout and then runs', async () => {
    // Long enough for a real connect on a loaded machine (the holders connect first).
    const connectTimeoutMs = 1_000;
    const backend = await openBackend(undefined, { connectTimeoutMs, poolWaitMs: 30_000 });
    const dbs = tenantDbs(backend, 5);
    const release = deferred();
    const held = dbs.slice(0, 4).map((db) => holding(db, release.promise));
    await expect.poll(() => backend.activity.transactions).toBe(4);
    const waiting = dbs[4]!.read<{ one: number }>('SELECT 1 AS one', []);
    await expect.poll(() => backend.gate.waiting).toBe(1);
    // Past node-postgres's connect timeout: its own queue would have failed the statement by now.
    const pgTimeout = deferred();
    setTimeout(pgTimeout.resolve, connectTimeoutMs + 300);
    await pgTimeout.promise;
    release.resolve();
    expect(await waiting).toEqual([{ one: 1 }]);
    await Promise.all(held);
    expect(backend.activity.poolWaits).toBe(1);
    expect(backend.activity.poolBusy).toBe(0);
  });

  it('a checkout that waited keeps its slot past the wait limit: no other gets in beside it', async () => {
    // The wait's timer must end when the turn comes: p-queue frees the slot of a task whose
    // signal aborts while it runs, and the task runs as long as the connection is out.
    const backend = await openBackend(undefined, { connectTimeoutMs: 5_000, poolWaitMs: 200 });
    const dbs = tenantDbs(backend, 6);
    const first = deferred();
    const rest = deferred();
    const held = dbs.slice(0, 4).map((db, i) => holding(db, i === 0 ? first.promise : rest.promise));
    await expect.poll(() => backend.activity.transactions).toBe(4);
    // The fifth waits for the first's connection, gets it, and keeps it past the wait limit.
    const second = deferred();
    const fifth = holding(dbs[4]!, second.promise);
    await expect.poll(() => backend.gate.waiting).toBe(1);
    first.resolve();
    await expect.poll(() => backend.activity.transactions).toBe(5);
    const pastLimit = deferred();
    setTimeout(pastLimit.resolve, 400);
    await pastLimit.promise;
    // Every slot is still out: the sixth waits out the limit, as the pool has no connection for it.
    const sixth = await dbs[5]!.read('SELECT 1', []).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(errorCodeOf(sixth)).toBe('STORE_BUSY');
    second.resolve();
    rest.resolve();
    await Promise.all([...held, fifth]);
  });

  it('a tenant starting goes ahead of the running tenants waiting for a connection', async () => {
    const backend = await openBackend();
    const dbs = tenantDbs(backend, 4);
    for (const db of dbs) db.running();
    const releases = dbs.map(() => deferred());
    const held = dbs.map((db, i) => holding(db, releases[i]!.promise));
    await expect.poll(() => backend.activity.transactions).toBe(4);
    const order: string[] = [];
    const running = new TenantDb(backend.gate, 'running', backend.location, undefined, backend.activity);
    running.running();
    const starting = new TenantDb(backend.gate, 'starting', backend.location, undefined, backend.activity);
    const after = deferred();
    // Each records when it got a connection and keeps it, so the next one waits for another.
    const reads = [running, starting].map((db, i) =>
      db.transaction(async () => {
        order.push(i === 0 ? 'running' : 'starting');
        await after.promise;
      }),
    );
    await expect.poll(() => backend.gate.waiting).toBe(2);
    // One connection comes back: it goes to the start, queued after the running tenant's read.
    releases[0]!.resolve();
    await expect.poll(() => order).toEqual(['starting']);
    expect(backend.gate.waiting).toBe(1);
    for (const release of releases) release.resolve();
    after.resolve();
    await Promise.all([...held, ...reads]);
    expect(order).toEqual(['starting', 'running']);
  });
});

/**
 * A server that accepts TCP connections and never answers (every connect to it times out after
 * `connectMs`), with a pool of 2 connections to it behind a gate whose waits run out after
 * `waitMs`; `close` ends them.
 */
async function silentDatabase(
  connectMs: number,
  waitMs: number,
): Promise<{ gate: PoolGate; activity: StoreActivity; close: () => Promise<void> }> {
  const sockets: Socket[] = [];
  const silent: Server = createServer((socket) => sockets.push(socket));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const port = (silent.address() as { port: number }).port;
  const pool = new pg.Pool({ host: '127.0.0.1', port, user: 'postgres', max: 2, connectionTimeoutMillis: connectMs });
  pool.on('error', () => undefined);
  const activity = new StoreActivity('postgres');
  const gate = new PoolGate(pool, 2, waitMs, activity, 'postgres://127.0.0.1', new StatementNames());
  const close = async (): Promise<void> => {
    for (const socket of sockets) socket.destroy();
    await pool.end();
    await new Promise((resolve) => silent.close(resolve));
  };
  return { gate, activity, close };
}

describe('PostgreSQL store: an unreachable database stays an outage behind the gate', () => {
  it('a connect that times out is STORE_UNAVAILABLE, recorded as the store problem', async () => {
    // A server that accepts the TCP connection and never answers: the connect itself times out.
    const { gate, activity, close } = await silentDatabase(100, 60_000);
    const db = new TenantDb(gate, 'acme', 'postgres://127.0.0.1', undefined, activity);
    try {
      const failed = await db.read('SELECT 1', []).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(errorCodeOf(failed)).toBe('STORE_UNAVAILABLE');
      expect(db.health.problem).toMatch(/cannot be reached \(Connection terminated due to connection timeout\)/);
      expect(activity.poolBusy).toBe(0);
      expect(gate.waiting).toBe(0);
    } finally {
      await close();
    }
  });
});

describe('PostgreSQL store: a database gone silent is an outage for the checkouts queued too', () => {
  it('gives the waits that run out the connection failure the checkouts met, not STORE_BUSY', async () => {
    // Every connection held by the outage itself (connects that time out, 200 ms each, two at a
    // time): the 30 tenants queued behind them were told STORE_BUSY, not recorded, and showed
    // no outage; 10 of them run out of their 2 s wait before they get a connection.
    const { gate, activity, close } = await silentDatabase(200, 2_000);
    const dbs = Array.from(
      { length: 30 },
      (_, i) => new TenantDb(gate, `t${i}`, 'postgres://127.0.0.1', undefined, activity),
    );
    try {
      const told = await Promise.all(
        dbs.map((db) =>
          db.read('SELECT 1', []).then(
            () => 'answered',
            (error: unknown) => errorCodeOf(error),
          ),
        ),
      );
      expect(activity.poolWaits).toBeGreaterThan(0);
      expect(told.filter((code) => code !== 'STORE_UNAVAILABLE')).toEqual([]);
      expect(dbs.filter((db) => db.health.problem === undefined)).toHaveLength(0);
      expect(activity.poolBusy).toBe(0);
      expect(gate.waiting).toBe(0);
    } finally {
      await close();
    }
  });
});

describe('what a poll makes of a busy store', () => {
  it('waits a second on STORE_BUSY, where STORE_UNAVAILABLE pauses as an outage', () => {
    const busy = classifyPollFailure(new StoreBusyError('every connection stayed in use'), 'career', 0);
    expect(busy).toEqual({ kind: 'storeBusy', reason: 'every connection stayed in use', pauseMs: STORE_BUSY_PAUSE_MS });
    expect(STORE_BUSY_PAUSE_MS).toBe(1_000);
  });
});
