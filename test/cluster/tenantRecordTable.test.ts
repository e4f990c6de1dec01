import { afterAll, describe, expect, it } from 'vitest';
import { TenantRecordTable, type RecordPool } from '../../src/cluster/tenantRecordTable.js';
import { settleTenants } from '../../src/tenants/settleTenants.js';
import type { ScannedTenant, TenantRecord } from '../../src/tenants/tenant.js';
import { until } from '../support/daemonProcess.js';
import { connectLeaseAdmin, createLeaseSchema } from '../support/leaseDatabase.js';

const admin = await connectLeaseAdmin('the tenant record table tests need PostgreSQL');
afterAll(async () => {
  await admin?.end();
});

const KEY = 'k1'.padEnd(64, '0');
const file = (name: string): ScannedTenant<string> => ({
  ok: true,
  tenant: { name, file: `/t/${name}.yaml`, config: name, keyFingerprint: KEY },
  fileText: `${name} text`,
});
/** What one replica decides from the files it sees. */
const decideFrom =
  (scanned: ScannedTenant<string>[], forgetAfterMs = 60_000) =>
  (records: readonly TenantRecord[]) => {
    const settled = settleTenants(scanned, records, () => scanned[0]!, forgetAfterMs);
    return { result: settled.tenants.map((t) => t.name), changes: settled.changes };
  };

describe.skipIf(!admin)('TenantRecordTable', () => {
  it('records the files of many tenants in one statement', async () => {
    const schema = await createLeaseSchema(admin!);
    try {
      const pool = schema.pool();
      const sent: string[] = [];
      // The pool as the table sees it, counting what each checked-out connection is sent.
      const counted: RecordPool = {
        query: (sql, params) => pool.query(sql, params as unknown[]),
        connect: async () => {
          const client = await pool.connect();
          const query = client.query.bind(client) as (sql: string, params?: unknown[]) => Promise<unknown>;
          (client as unknown as { query: typeof query }).query = (sql, params) => {
            sent.push(sql.trim().split(/\s+/)[0]!);
            return query(sql, params);
          };
          return client;
        },
      };
      const scanned = Array.from({ length: 200 }, (_, i) => {
        const f = file(`t${i}`);
        return f.ok ? { ...f, tenant: { ...f.tenant, keyFingerprint: `k${i}-`.padEnd(64, '0') } } : f;
      });
      const running = await new TenantRecordTable(counted).settle(decideFrom(scanned));
      expect(running).toHaveLength(200);
      expect(sent.filter((s) => s === 'INSERT')).toHaveLength(1);
      const { rows } = await schema.query<{ n: number }>('SELECT count(*)::int AS n FROM changefeed_tenant_records');
      expect(rows[0]!.n).toBe(200);
    } finally {
      await schema.close();
    }
  });

  it('two replicas settling claims of one key at once: one owner, and the other decides again from it', async () => {
    const schema = await createLeaseSchema(admin!);
    try {
      // Each replica sees another file with the key (one read the directory before the other).
      // Both decide to claim it from their first read; the settle lock, held here until both wait
      // on it, makes them write one after the other, the second deciding again from the first.
      const holder = await schema.pool().connect();
      await holder.query('BEGIN');
      await holder.query("SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.changefeed_tenant_records'))");
      const settling = Promise.all([
        new TenantRecordTable(schema.pool()).settle(decideFrom([file('b')])),
        new TenantRecordTable(schema.pool()).settle(decideFrom([file('a')])),
      ]);
      await until(
        async () => {
          const { rows } = await admin!.query(
            `SELECT count(*)::int AS n FROM pg_locks
              WHERE locktype = 'advisory' AND NOT granted
                AND objid = ((hashtext($1 || '.changefeed_tenant_records')::bigint) & 4294967295)::oid`,
            [schema.name],
          );
          return (rows[0] as { n: number }).n === 2;
        },
        10_000,
        'both settlements waiting on the lock',
      );
      await holder.query('COMMIT');
      holder.release();
      const [first, second] = await settling;
      const { rows } = await schema.query<{ tenant: string }>('SELECT tenant FROM changefeed_tenant_records');
      expect(rows).toHaveLength(1);
      const owner = rows[0]!.tenant;
      // The owner's replica runs it; the other found the key owned by a tenant it has no file of.
      expect([first, second].flat()).toEqual([owner]);

      // Settled again with nothing new: no write, the same answer.
      const table = new TenantRecordTable(schema.pool());
      expect(await table.settle(decideFrom([file(owner)]))).toEqual([owner]);
      expect(await table.read()).toEqual([{ tenant: owner, keyFingerprint: KEY, fileText: `${owner} text` }]);
    } finally {
      await schema.close();
    }
  });
  it('marks a missing file on the database clock, clears the mark when it is back, forgets the record only after the grace', async () => {
    const schema = await createLeaseSchema(admin!);
    try {
      const table = new TenantRecordTable(schema.pool());
      await table.settle(decideFrom([file('a')]));
      expect(await table.settle(decideFrom([]))).toEqual([]);
      const [marked] = await table.read();
      expect(marked?.tenant).toBe('a');
      expect(marked?.missingForMs).toBeGreaterThanOrEqual(0);
      await table.settle(decideFrom([file('a')]));
      expect((await table.read())[0]?.missingForMs).toBeUndefined();
      // Missing for an hour by the database's clock: forgotten at the next read that misses it.
      await table.settle(decideFrom([]));
      await schema.query("UPDATE changefeed_tenant_records SET missing_since = clock_timestamp() - interval '1 hour'");
      await table.settle(decideFrom([], 3_600_000 - 1_000));
      expect(await table.read()).toEqual([]);
    } finally {
      await schema.close();
    }
  });
  it('a settlement whose connection is cut while it waits for the lock fails, and nothing escapes', async () => {
    const schema = await createLeaseSchema(admin!);
    const escaped: unknown[] = [];
    const onEscape = (error: unknown): void => void escaped.push(error);
    process.on('uncaughtException', onEscape);
    try {
      const holder = await schema.pool().connect();
      await holder.query('BEGIN');
      await holder.query("SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.changefeed_tenant_records'))");
      const settling = new TenantRecordTable(schema.pool()).settle(decideFrom([file('a')]));
      const outcome = settling.then(
        () => 'settled',
        () => 'refused',
      );
      let waiter = 0;
      await until(
        async () => {
          const { rows } = await admin!.query<{ pid: number }>(
            `SELECT pid FROM pg_locks
              WHERE locktype = 'advisory' AND NOT granted
                AND objid = ((hashtext($1 || '.changefeed_tenant_records')::bigint) & 4294967295)::oid`,
            [schema.name],
          );
          waiter = rows[0]?.pid ?? 0;
          return waiter !== 0;
        },
        10_000,
        'the settlement waiting on the lock',
      );
      // As an operator would cut it (or a PostgreSQL restart): the backend goes mid-transaction.
      await admin!.query('SELECT pg_terminate_backend($1)', [waiter]);
      expect(await outcome).toBe('refused');
      await new Promise((resolve) => setTimeout(resolve, 200));
      await holder.query('COMMIT');
      holder.release();
      expect(escaped).toEqual([]);
    } finally {
      process.off('uncaughtException', onEscape);
      await schema.close();
    }
  });
});
