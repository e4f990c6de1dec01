import { describe, expect, it } from 'vitest';
import type { WriteFence } from '../../src/cluster/writeFence.js';
import { StoreUnavailableError } from '../../src/store/storeHealth.js';
import { POSTGRES_PORT } from '../support/postgresAdmin.js';
import { startTcpProxy } from '../support/tcpProxy.js';
import { admin, freshSchema, openBackend, prepare } from './postgresTestDb.js';
import { WRITES, writeFixture } from './contract/writeContract.js';
import { entry, ingest, T } from './storeContract.suite.js';

describe.skipIf(!admin)('writes to the PostgreSQL store', () => {
  it("checks the fence of every write on the write's own connection, in its transaction, before it writes", async () => {
    // Refusal and rollback are the shared suite's (contract/writeContract.ts); this is where the check runs.
    const backend = await openBackend(freshSchema());
    let probing = false;
    const probed: boolean[] = [];
    const fence: WriteFence = {
      statementTimeoutMs: 10_000,
      check: async (client, begin) => {
        await client.query(begin);
        if (!probing) return;
        // SAVEPOINT fails outside a transaction; no transaction id is assigned before a write.
        await client.query('SAVEPOINT fence_probe');
        const { rows } = await client.query<{ clean: boolean }>(
          'SELECT pg_current_xact_id_if_assigned() IS NULL AS clean',
        );
        await client.query('RELEASE SAVEPOINT fence_probe');
        probed.push(rows[0]?.clean === true);
      },
    };
    const store = await backend.tenantStore('t', { fence });
    const fixture = await writeFixture(store);
    probing = true;
    for (const [, write] of WRITES) await write(store, fixture);
    expect(probed).toEqual(WRITES.map(() => true));
  });

  it('answers StoreUnavailableError, with the reason in health, while the database cannot be reached', async () => {
    const proxy = await startTcpProxy(POSTGRES_PORT);
    try {
      const backend = await openBackend(freshSchema(), {
        url: `postgres://postgres@127.0.0.1:${proxy.port}/test`,
        connectTimeoutMs: 2_000,
      });
      const store = await backend.tenantStore('t');
      await prepare(store);
      await proxy.stop();

      const failed = await ingest(store, [entry('e-1')]).catch((e: unknown) => e);
      expect(failed).toBeInstanceOf(StoreUnavailableError);
      expect(store.health.problem).toMatch(/^the database postgres:\/\/.*127\.0\.0\.1.* cannot be reached/);
      expect(store.health.problem).toBe((failed as Error).message);
      await expect(store.getMeta('k')).rejects.toThrow(StoreUnavailableError);

      await proxy.start();
      expect(await ingest(store, [entry('e-1')])).toMatchObject({ emitted: 1 });
      expect(store.health.problem).toBeUndefined();
    } finally {
      await proxy.close();
    }
  });

  it('gives every connection back after failed transactions, and recovers from connections the server ended', async () => {
    const applicationName = `cf-test-conn-${process.pid}`;
    const backend = await openBackend(freshSchema(), { applicationName });
    const store = await backend.tenantStore('t');
    await prepare(store);
    // More failed ingests than the pool has connections (4): each must give its connection back.
    for (let i = 0; i < 10; i++) {
      const failing = ingest(store, [entry(`e-${i}`)], {
        toEvent: () => {
          throw new Error('cannot build');
        },
      });
      await expect(failing).rejects.toThrow('cannot build');
    }
    expect(await ingest(store, [entry('e-ok')])).toMatchObject({ emitted: 1 });

    // The server ends the pool's connections (a restart, an operator): the store reconnects.
    const { rows } = await admin!.query<{ ended: boolean }>(
      'SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE application_name = $1',
      [applicationName],
    );
    expect(rows.length).toBeGreaterThan(0);
    // A write may meet an ended connection before the pool noticed: it says so, typed, and the
    // connection is dropped; at worst each of the pool's connections fails one write.
    for (let attempt = 1; ; attempt++) {
      const outcome = await store.setMeta('k', '2').catch((e: unknown) => e);
      if (outcome === undefined) break;
      expect(outcome).toBeInstanceOf(StoreUnavailableError);
      expect(attempt).toBeLessThanOrEqual(4);
    }
    expect(await store.getMeta('k')).toBe('2');
    expect(store.health.problem).toBeUndefined();
  });

  it('gives up a statement the database does not finish within the statement timeout', async () => {
    const schema = freshSchema();
    const backend = await openBackend(schema, { statementTimeoutMs: 300 });
    const store = await backend.tenantStore('t');
    await admin!.query('BEGIN');
    try {
      await admin!.query(`LOCK TABLE "${schema}".meta IN ACCESS EXCLUSIVE MODE`);
      const failed = await store.setMeta('k', 'v').catch((e: unknown) => e);
      expect(failed).toBeInstanceOf(StoreUnavailableError);
      expect(store.health.problem).toMatch(/did not answer in time/);
    } finally {
      await admin!.query('ROLLBACK');
    }
    await store.setMeta('k', 'v');
    expect(store.health.problem).toBeUndefined();
  });

  it("ends a session left idle inside a fenced transaction within the fence's statement timeout", async () => {
    const schema = freshSchema();
    const backend = await openBackend(schema);
    let pid = 0;
    let resume = (): void => undefined;
    const resumed = new Promise<void>((resolve) => (resume = resolve));
    // A replica paused inside its write (SIGSTOP, a long GC) leaves its session idle in the
    // transaction that holds the lease row's lock: the database must end it, not the next holder wait.
    const fence: WriteFence = {
      statementTimeoutMs: 300,
      check: async (client, begin) => {
        await client.query(begin);
        pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
        await resumed;
      },
    };
    const store = await backend.tenantStore('t', { fence });
    const write = store.setMeta('k', 'v').catch((e: unknown) => e);
    await until(() => Promise.resolve(pid !== 0));
    // The pool's own idle timeout is a minute: ended sooner, it was the fence's bound.
    await until(
      async () => (await admin!.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).rowCount === 0,
    );
    resume();
    expect(await write).toBeInstanceOf(StoreUnavailableError);
    expect((await admin!.query(`SELECT 1 FROM "${schema}".meta WHERE tenant = 't' AND key = 'k'`)).rowCount).toBe(0);
  });

  it('lets no ingest of a tenant commit seqs above those of one still in flight, so a reader skips nothing', async () => {
    const applicationName = `cf-test-order-${process.pid}`;
    const backend = await openBackend(freshSchema(), { applicationName });
    const store = await backend.tenantStore('t');
    const schema = backend.schema;
    await prepare(store);
    await store.watchedLogs.registerAll([
      { log: 'career', objectId: 'c-2', origin: 'config', coverageStart: T, now: T },
    ]);
    // The tenant has a journal already: its head row exists.
    await ingest(store, [entry('before')]);
    const head = await store.journal.head();
    // The admin is in a transaction, which would keep reading one snapshot of the activity: cleared each time.
    const blockedOnLocks = async () => {
      await admin!.query('SELECT pg_stat_clear_snapshot()');
      return (
        await admin!.query<{ n: number }>(
          `SELECT COUNT(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
          [applicationName],
        )
      ).rows[0]!.n;
    };

    // Ingest A draws its seqs, then waits for the cursor row of c-1, which the admin holds.
    await admin!.query('BEGIN');
    // Settled either way, so a failed expectation below never leaves a rejection unhandled.
    let first: Promise<unknown> = Promise.resolve();
    let second: Promise<unknown> = Promise.resolve();
    let position = 0;
    try {
      await admin!.query(`SELECT 1 FROM "${schema}".watched_logs WHERE tenant = 't' AND object_id = 'c-1' FOR UPDATE`);
      first = ingest(store, [entry('a-1'), entry('a-2')]).catch((e: unknown) => e);
      await until(async () => (await blockedOnLocks()) === 1);
      // Ingest B, of another log of the tenant, must wait for A rather than commit higher seqs first.
      let secondDone = false;
      second = ingest(store, [entry('b-1'), entry('b-2')], { objectId: 'c-2' })
        .catch((e: unknown) => e)
        .finally(() => (secondDone = true));
      await until(async () => secondDone || (await blockedOnLocks()) === 2);
      const page = await store.journal.page(head, 100);
      expect(page.events).toEqual([]);
      position = page.next;
    } finally {
      await admin!.query('ROLLBACK');
    }
    expect(await Promise.all([first, second])).toEqual([
      expect.objectContaining({ emitted: 2 }),
      expect.objectContaining({ emitted: 2 }),
    ]);
    const rest = await store.journal.page(position, 100);
    expect(rest.events).toHaveLength(4);
    expect(rest.reachedHead).toBe(true);
  });
});

/** Resolves once `condition` holds, asking again every few milliseconds (the test's timeout bounds it). */
async function until(condition: () => Promise<boolean>): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 10));
}
