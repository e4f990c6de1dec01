import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { BatchedRead } from '../../src/store/postgres/batchedRead.js';
import { PoolGate } from '../../src/store/postgres/poolGate.js';
import { StatementNames } from '../../src/store/postgres/statementNames.js';
import { TenantDb } from '../../src/store/postgres/tenantDb.js';
import { StoreActivity } from '../../src/store/storeActivity.js';
import { StoreUnavailableError } from '../../src/store/storeHealth.js';
import { POSTGRES_URL } from '../support/postgresAdmin.js';
import { admin } from './postgresTestDb.js';

describe('BatchedRead', () => {
  let pool: pg.Pool | undefined;
  afterEach(async () => {
    await pool?.end();
  });

  it('records a failed shared read against every tenant whose question was in it, not only the first', async () => {
    // Nothing listens on port 1: the one statement of the batch fails to connect.
    pool = new pg.Pool({ host: '127.0.0.1', port: 1, database: 'test', connectionTimeoutMillis: 5_000 });
    const activity = new StoreActivity('postgres');
    const gate = new PoolGate(pool, 10, 60_000, activity, 'postgres://127.0.0.1:1/test', new StatementNames());
    const dbs = ['t1', 't2', 't3'].map(
      (tenant) => new TenantDb(gate, tenant, 'postgres://127.0.0.1:1/test', undefined, activity),
    );
    const read = new BatchedRead<{ tenant: string }>(
      (keys) => ({ sql: 'SELECT unnest($1::text[]) AS tenant', params: [keys] }),
      (row) => row.tenant,
    );
    const answers = await Promise.allSettled(dbs.map((db) => read.rowsOf(db, db.tenant)));
    expect(answers.map((a) => a.status)).toEqual(['rejected', 'rejected', 'rejected']);
    for (const answer of answers)
      expect((answer as PromiseRejectedResult).reason).toBeInstanceOf(StoreUnavailableError);
    for (const db of dbs) expect(db.health.problem).toContain('cannot be reached');
  });

  it.skipIf(!admin)(
    "sends a batch a starting tenant asked in in the gate's start lane, though a running tenant opened it",
    async () => {
      pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 1 });
      const activity = new StoreActivity('postgres');
      const gate = new PoolGate(pool, 1, 60_000, activity, 'postgres://127.0.0.1/test', new StatementNames());
      const [runs, starts] = ['runs', 'starts'].map(
        (tenant) => new TenantDb(gate, tenant, 'test', undefined, activity),
      );
      runs!.running();
      const read = new BatchedRead<{ tenant: string }>(
        (keys) => ({ sql: 'SELECT unnest($1::text[]) AS tenant', params: [keys] }),
        (row) => row.tenant,
      );
      const order: string[] = [];
      const held = await gate.connect('run');
      // A running tenant's statement already waiting for the one connection.
      const queued = gate.query('SELECT 1', [], 'run').then(() => order.push('queued run statement'));
      const batch = Promise.all([read.rowsOf(runs!, 'runs'), read.rowsOf(starts!, 'starts')]).then((answers) => {
        order.push('batch');
        return answers;
      });
      // The batch is in the gate's queue a turn later.
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setTimeout(resolve, 50));
      held.release();
      expect((await batch).map((rows) => rows.map((row) => row.tenant))).toEqual([['runs'], ['starts']]);
      await queued;
      expect(order).toEqual(['batch', 'queued run statement']);
    },
  );
});
