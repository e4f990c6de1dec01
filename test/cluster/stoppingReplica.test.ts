import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { LeaseTable } from '../../src/cluster/leaseTable.js';
import { PostgresStoreBackend } from '../../src/store/postgres/postgresStoreBackend.js';
import { until } from '../support/daemonProcess.js';
import { inProcessCluster } from '../support/inProcessReplicas.js';
import { POSTGRES_URL } from '../support/postgresAdmin.js';
import { writeTenantFile } from '../support/tenantFile.js';
import { connectAdmin, simulatedCompanies, writeRound } from './replicaHarness.js';
import { acquireOne } from '../support/acquireOne.js';

const admin = await connectAdmin('the stopping replica test needs PostgreSQL');
afterAll(async () => {
  await admin?.end();
});

/** Standard output whose writes are held, once `hold` is set, until `release`. */
class HeldStdout extends Writable {
  holding = false;
  readonly held: (() => void)[] = [];

  constructor() {
    super({
      write: (_chunk: Buffer, _encoding, done: () => void) => {
        if (this.holding) this.held.push(done);
        else done();
      },
    });
  }

  release(): void {
    this.holding = false;
    for (const done of this.held.splice(0)) done();
  }
}

describe.skipIf(!admin)('a replica that stops', () => {
  it('takes no tenant freed while it drains, and returns from stop() with nothing running and no lease held', async () => {
    const simulator = await simulatedCompanies(71, 2);
    const cluster = inProcessCluster(admin!, { simulatorUrl: simulator.url, leaseSeconds: 6 });
    // company-0 delivers to a standard output that holds its writes: the drain waits for them.
    writeTenantFile(cluster.tenantsDir, 'company-0', {
      apiKey: simulator.companies[0]!.apiKey,
      sink: '{ name: out, type: stdout }',
    });
    writeTenantFile(cluster.tenantsDir, 'company-1', {
      apiKey: simulator.companies[1]!.apiKey,
      sinkPath: `${cluster.dir}/company-1.jsonl`,
    });
    // Another replica holds company-1 before A starts (a long lease, renewed by nobody).
    const other = await PostgresStoreBackend.open({ url: POSTGRES_URL, schema: cluster.schema, maxConnections: 1 });
    try {
      const otherTable = new LeaseTable(other.leasePool, { leaseMs: 120_000 });
      const held = await acquireOne(otherTable, 'company-1', 'replica-b');
      expect(held).toBeDefined();

      const stdout = new HeldStdout();
      const a = await cluster.start('replica-a', { stdout });
      await until(
        async () => (await cluster.holders()).get('company-0') === 'replica-a',
        30_000,
        'A holding company-0',
      );
      stdout.holding = true;
      writeRound(simulator);
      await until(() => stdout.held.length > 0, 30_000, "a write of company-0's events held in flight");

      const stopped = a.daemon.stop();
      // While A drains, the other replica gives company-1 up, and A's lease rounds go on.
      expect(await otherTable.release('company-1', 'replica-b', held!.epoch)).toBe(true);
      const releasedAt = (await cluster.heartbeatOf('replica-a'))!;
      const beats = new Set<number>();
      await until(
        async () => {
          const at = await cluster.heartbeatOf('replica-a');
          if (at !== undefined && at > releasedAt) beats.add(at);
          return beats.size >= 2;
        },
        30_000,
        'two lease rounds of A after company-1 was freed',
      );
      stdout.release();
      await stopped;

      expect(a.logged('lease acquired; tenant starting here', 'company-1')).toBe(false);
      expect(simulator.requests.filter((r) => r.company === 1)).toEqual([]);
      expect(a.daemon.readiness().filter((check) => check.name.startsWith('company-'))).toEqual([]);
      const { rows } = await admin!.query<{ tenant: string }>(
        `SELECT tenant FROM "${cluster.schema}".changefeed_leases WHERE holder = 'replica-a' AND expires_at > clock_timestamp()`,
      );
      expect(rows).toEqual([]);
      expect(a.logged('lease given back; replica stopping', 'company-0')).toBe(true);
    } finally {
      await other.close();
    }
  }, 90_000);
});
