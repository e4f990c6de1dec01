import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { onTestFinished, type TestContext } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { deliveredEvents, expectedEventIds } from '../support/daemonHarness.js';
import { startDaemonProcess, until, type DaemonProcess } from '../support/daemonProcess.js';
import { connectPostgresPool, dropSchema, POSTGRES_URL } from '../support/postgresAdmin.js';
import { skipOrFail } from '../support/requiredBinary.js';
import { writeTenantFile } from '../support/tenantFile.js';
import { SECRET } from '../support/webhookHarness.js';

/**
 * Replicas of `changefeed run` (real child processes) sharing one PostgreSQL schema and one
 * tenants directory with a tenant per simulated company, each delivering to a file of its own.
 */
export interface ReplicaSet {
  readonly dir: string;
  /** The tenants directory every replica reads. */
  readonly tenantsDir: string;
  readonly schema: string;
  /** The main config file every replica runs with. */
  readonly config: string;
  readonly admin: pg.Pool;
  readonly replicas: Map<string, DaemonProcess>;
  /**
   * Starts a replica; `env` adds variables (CHANGEFEED_HTTP_PORT, ...); `view` gives it a tenants
   * directory and rescan interval of its own (a replica whose mount differs, or whose view is
   * stale), in a config file of its own.
   */
  start(instanceId: string, env?: Record<string, string>, view?: ReplicaView): DaemonProcess;
  tenantName(company: number): string;
  /** Writes the tenant file of `company` (every company below `options.companies` has one from the start). */
  writeTenantFile(company: number): void;
  /** Writes tenant file `name` with `company`'s key and a sink file of its own, `<name>.jsonl` in `dir`. */
  writeTenantFileAs(name: string, company: number): void;
  /** Removes the tenant file of `company`. */
  removeTenantFile(company: number): void;
  eventsFile(company: number): string;
  /** Tenant -> holder of an unexpired lease, from the lease table. */
  holders(): Promise<Map<string, string>>;
  close(): Promise<void>;
}

/** What one replica sees of the tenants, when not the set's shared directory. */
export interface ReplicaView {
  readonly tenantsDir: string;
  readonly rescanSeconds?: number;
}

export async function connectAdmin(what: string): Promise<pg.Pool | undefined> {
  const connected = await connectPostgresPool();
  if ('pool' in connected) return connected.pool;
  skipOrFail(what, connected.reason);
  return undefined;
}

/**
 * The test that owns a simulator or a replica set: it is closed when that test finishes. A test
 * of a `describe.concurrent` passes its own context, since the module-level hooks (afterEach,
 * onTestFinished) cannot tell concurrent tests apart: closing every set after each test would
 * stop the sets of the tests still running.
 */
export type OwningTest = Pick<TestContext, 'onTestFinished'>;

/** `test.onTestFinished`, or the running test's when no test is given (tests run one at a time). */
function whenFinished(test: OwningTest | undefined, fn: (context: TestContext) => Promise<void>): void {
  if (test) test.onTestFinished(fn);
  else onTestFinished(fn);
}

/** The simulated service of the replica tests: companies of two careers and a skill, no history, reads unlimited. */
export async function simulatedCompanies(seed: number, companies: number, test?: OwningTest): Promise<Simulator> {
  const simulator = await startSimulator({
    seed,
    companies,
    careers: 2,
    skills: 1,
    eventsPerHour: 0,
    historyHours: 0,
    readsPerHour: 1_000_000,
  });
  whenFinished(test, () => simulator.close());
  return simulator;
}

export function startReplicaSet(
  admin: pg.Pool,
  simulator: Simulator,
  options: {
    leaseSeconds: number;
    companies: number;
    /**
     * Each tenant's read budget per hour, spent round-robin over its logs from the start, however
     * quiet. By default the budget is spent adaptively and a newly discovered log is first polled
     * within a minute (watch.schedule.firstPollWithinSeconds), so a quiet log is polled seldom.
     */
    readsPerHour?: number;
    /** More YAML lines of the main config file every replica runs with (a `feed` section, say). */
    mainLines?: readonly string[];
    /** Each tenant delivers to this webhook (signed with webhookHarness's SECRET) instead of a file of its own. */
    webhookUrl?: string;
    /** `tenants.forgetAfterSeconds`; the default (an hour) when unset. */
    forgetAfterSeconds?: number;
  },
  test?: OwningTest,
): ReplicaSet {
  // Not test/support/tempDir.ts's: it removes every directory made in a test when any test ends.
  const dir = mkdtempSync(join(tmpdir(), 'changefeed-replicas-'));
  const schema = `cf_test_${randomBytes(6).toString('hex')}`;
  const tenantsDir = join(dir, 'tenants');
  mkdirSync(tenantsDir);
  const tenantName = (company: number): string => `company-${String(company).padStart(3, '0')}`;
  const eventsFile = (company: number): string => join(dir, `${tenantName(company)}.jsonl`);
  const tenantFile = (company: number): string => join(tenantsDir, `${tenantName(company)}.yaml`);
  const writeCompanyFile = (company: number): void =>
    writeTenantFile(tenantsDir, tenantName(company), {
      apiKey: simulator.companies[company]!.apiKey,
      ...(options.webhookUrl
        ? { sink: `{ name: out, type: webhook, url: "${options.webhookUrl}", secret: "${SECRET}" }` }
        : { sinkPath: eventsFile(company) }),
      lines: options.readsPerHour
        ? [
            `budget: { readsPerHour: ${options.readsPerHour}, reserve: 0 }`,
            'watch: { schedule: { policy: round-robin, firstPollWithinSeconds: 0 } }',
          ]
        : [],
    });
  for (let company = 0; company < options.companies; company++) writeCompanyFile(company);
  const config = join(dir, 'changefeed.yaml');
  const writeConfig = (file: string, view: ReplicaView): void =>
    writeFileSync(
      file,
      [
        `api: { baseUrl: "${simulator.url}", timeoutMs: 5000 }`,
        'watch: { careers: { discover: true }, skills: { discover: true }, startFrom: "2000-01-01T00:00:00Z", pollIntervalSeconds: 1 }',
        'budget: { readsPerHour: 3600000, reserve: 0 }',
        `store: { url: "${POSTGRES_URL}", schema: ${schema}, maxConnections: 4 }`,
        `cluster: { leaseSeconds: ${options.leaseSeconds} }`,
        `tenants: { dir: "${view.tenantsDir}", rescanSeconds: ${view.rescanSeconds ?? 1}` +
          (options.forgetAfterSeconds === undefined ? ' }' : `, forgetAfterSeconds: ${options.forgetAfterSeconds} }`),
        'log: { level: info }',
        ...(options.mainLines ?? []),
      ].join('\n'),
    );
  writeConfig(config, { tenantsDir });
  const replicas = new Map<string, DaemonProcess>();
  const set: ReplicaSet = {
    dir,
    tenantsDir,
    schema,
    config,
    admin,
    replicas,
    tenantName,
    eventsFile,
    writeTenantFile: writeCompanyFile,
    writeTenantFileAs: (name, company) =>
      writeTenantFile(tenantsDir, name, {
        apiKey: simulator.companies[company]!.apiKey,
        sinkPath: join(dir, `${name}.jsonl`),
      }),
    removeTenantFile: (company) => rmSync(tenantFile(company)),
    start(instanceId, env = {}, view) {
      let file = config;
      if (view) {
        file = join(dir, `changefeed-${instanceId}.yaml`);
        writeConfig(file, view);
      }
      const replica = startDaemonProcess(['--config', file], {
        CHANGEFEED_INSTANCE_ID: instanceId,
        CHANGEFEED_STATE_DIR: join(dir, `state-${instanceId}`),
        ...env,
      });
      replicas.set(instanceId, replica);
      return replica;
    },
    async holders() {
      try {
        const { rows } = await admin.query<{ tenant: string; holder: string }>(
          `SELECT tenant, holder FROM "${schema}".changefeed_leases WHERE holder IS NOT NULL AND expires_at > clock_timestamp()`,
        );
        return new Map(rows.map((r) => [r.tenant, r.holder]));
      } catch (error) {
        // Before the first replica has migrated the schema.
        if ((error as { code?: string }).code === '42P01') return new Map<string, string>();
        throw error;
      }
    },
    async close() {
      for (const replica of replicas.values()) {
        if (replica.child.exitCode === null && replica.child.signalCode === null) {
          replica.child.kill('SIGKILL');
          await replica.exited();
        }
      }
      await dropSchema(admin, schema).catch(() => undefined);
      if (!process.env.KEEP_TEMP) rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    },
  };
  // The replicas' logs shown first when the test failed: they explain it. Closed before the
  // simulator, which was started first (hooks of a test run in reverse order).
  whenFinished(test, async (context) => {
    if (context.task.result?.state === 'fail') printLogsOf(set, `changefeed-replicas-${context.task.id}`);
    await set.close();
  });
  return set;
}

/**
 * Each replica's log: the tail printed, all of it in a file under the temp dir, named by the test
 * (its id) so two failing tests of one worker do not overwrite each other's.
 */
function printLogsOf(set: ReplicaSet, prefix: string): void {
  for (const [id, replica] of set.replicas) {
    const file = join(tmpdir(), `${prefix}-${process.pid}-${id}.log`);
    writeFileSync(file, replica.logs());
    console.log(`--- ${id} (all of it in ${file})\n${replica.logs().slice(-3000)}`);
  }
}

/** Two new entries in the first career of every company, performed now. */
export function writeRound(simulator: Simulator): void {
  for (const company of simulator.companies)
    company.appendEntries('career', company.careerIds[0]!, [{ event: 'level_added' }, { event: 'level_added' }]);
}

/** Waits until every entry of the first `companies` companies is in its tenant's file sink. */
export async function everythingDelivered(
  replicas: ReplicaSet,
  simulator: Simulator,
  companies = simulator.companies.length,
): Promise<void> {
  await until(
    () =>
      simulator.companies.slice(0, companies).every((company, i) => {
        const delivered = new Set(deliveredIds(replicas, i));
        return expectedEventIds(company).every((id) => delivered.has(id));
      }),
    120_000,
    'every entry of every company delivered',
  );
}

/** The event ids in `company`'s file sink, in the order written (none while the file is missing). */
export function deliveredIds(replicas: ReplicaSet, company: number): string[] {
  try {
    return deliveredEvents(replicas.dir, `${replicas.tenantName(company)}.jsonl`).map((e) => e.id);
  } catch {
    return [];
  }
}
