import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type pg from 'pg';
import { loadMainConfig } from '../../src/config/mainConfig.js';
import { ChangefeedDaemon } from '../../src/daemon/changefeedDaemon.js';
import { createLogger } from '../../src/observe/createLogger.js';
import { closeAfterTest } from './closeAfterTest.js';
import { dropSchema, POSTGRES_URL } from './postgresAdmin.js';
import { makeTempDir } from './tempDir.js';

/** One line a replica logged. */
export type LogLine = { level: number; msg: string; tenant?: string } & Record<string, unknown>;

export interface InProcessReplica {
  readonly id: string;
  readonly daemon: ChangefeedDaemon;
  readonly logs: readonly LogLine[];
  /** Called with every line logged from now on, as it is logged. */
  onLog(listener: (line: LogLine) => void): void;
  /** Whether it logged `msg` (for `tenant`, when given). */
  logged(msg: string, tenant?: string): boolean;
}

/**
 * Replicas of the daemon in the test's own process, so that a test can look at their tenants and
 * hand a sink a stream it holds, on one fresh PostgreSQL schema and one tenants directory. Every
 * replica is stopped and the schema dropped after the test.
 */
export interface InProcessCluster {
  readonly schema: string;
  readonly tenantsDir: string;
  readonly dir: string;
  /**
   * Starts a replica with instance id `id`; `stdout` is where its stdout sinks write, `overrides`
   * more settings (dotted paths) over the cluster's.
   */
  start(
    id: string,
    options?: { stdout?: NodeJS.WritableStream; overrides?: Record<string, unknown> },
  ): Promise<InProcessReplica>;
  /** Tenant -> holder of an unexpired lease, from the lease table. */
  holders(): Promise<Map<string, string>>;
  /** When `id` last heartbeated, by the database's clock (ms), or undefined. */
  heartbeatOf(id: string): Promise<number | undefined>;
}

export function inProcessCluster(
  admin: pg.Pool,
  options: { simulatorUrl: string; leaseSeconds: number },
): InProcessCluster {
  const dir = makeTempDir();
  const tenantsDir = join(dir, 'tenants');
  mkdirSync(tenantsDir);
  const schema = `cf_test_${randomBytes(6).toString('hex')}`;
  const replicas: InProcessReplica[] = [];
  closeAfterTest(async () => {
    await Promise.all(replicas.map((r) => r.daemon.stop()));
    await dropSchema(admin, schema);
  });
  return {
    schema,
    tenantsDir,
    dir,
    async start(id, startOptions = {}) {
      const logs: LogLine[] = [];
      const listeners: ((line: LogLine) => void)[] = [];
      const logger = createLogger({
        level: 'info',
        destination: new Writable({
          write(chunk: Buffer, _encoding, done) {
            const line = JSON.parse(chunk.toString()) as LogLine;
            logs.push(line);
            for (const listener of listeners) listener(line);
            done();
          },
        }),
      });
      const main = loadMainConfig({
        env: {},
        overrides: {
          'api.baseUrl': options.simulatorUrl,
          'watch.careers.discover': true,
          'watch.skills.discover': true,
          'watch.startFrom': '2000-01-01T00:00:00Z',
          'watch.pollIntervalSeconds': 1,
          'watch.schedule.firstPollWithinSeconds': 0,
          'budget.readsPerHour': 3_600_000,
          'budget.reserve': 0,
          stateDir: join(dir, `state-${id}`),
          'tenants.dir': tenantsDir,
          'tenants.rescanSeconds': 1,
          'store.url': POSTGRES_URL,
          'store.schema': schema,
          'store.maxConnections': 4,
          'cluster.leaseSeconds': options.leaseSeconds,
          'cluster.instanceId': id,
          ...startOptions.overrides,
        },
      });
      const daemon = new ChangefeedDaemon(main, {
        logger,
        ...(startOptions.stdout ? { stdout: startOptions.stdout } : {}),
      });
      const replica: InProcessReplica = {
        id,
        daemon,
        logs,
        onLog: (listener) => listeners.push(listener),
        logged: (msg, tenant) => logs.some((l) => l.msg === msg && (tenant === undefined || l.tenant === tenant)),
      };
      replicas.push(replica);
      await daemon.start();
      return replica;
    },
    async holders() {
      const { rows } = await admin.query<{ tenant: string; holder: string }>(
        `SELECT tenant, holder FROM "${schema}".changefeed_leases WHERE holder IS NOT NULL AND expires_at > clock_timestamp()`,
      );
      return new Map(rows.map((r) => [r.tenant, r.holder]));
    },
    async heartbeatOf(id) {
      const { rows } = await admin.query<{ at: Date }>(
        `SELECT heartbeat_at AS at FROM "${schema}".changefeed_instances WHERE instance_id = $1`,
        [id],
      );
      return rows[0]?.at.getTime();
    },
  };
}
