import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Simulator } from '../../src/simulator/index.js';
import { openStoreBackend } from '../../src/store/openStoreBackend.js';
import { storeConfigSchema } from '../../src/store/storeConfig.js';
import { until } from './daemonProcess.js';
import { runCliInProcess } from './runCli.js';
import { makeTempDir } from './tempDir.js';
import { startTestSimulator } from './testSimulator.js';
import { writeTenantFile } from './tenantFile.js';

/** Two tenants of a tenants directory, each one company of the simulator with its own key and sink. */
export interface TwoTenants {
  simulator: Simulator;
  dir: string;
  /** The main config file (`tenants.dir` set, no key). */
  config: string;
  tenantsDir: string;
  /** Each tenant's file sink. */
  sinkFile(tenant: 'acme' | 'beta'): string;
  /** The store settings of the main file. */
  store: { stateDir: string; url?: string; schema?: string };
  /** The careers each tenant watches (its company's, plus `extraCareers`). */
  careers: { acme: string[]; beta: string[] };
}

/**
 * Tenants `acme` (company 0, 5 career events) and `beta` (company 1, 8 events), each watching its
 * company's careers with a file sink of its own, on SQLite or the PostgreSQL store `store`. With
 * `runOnce` their stores are filled by one `run --once` of the real CLI.
 */
export async function twoTenants(
  options: { store?: { url: string; schema: string }; extraCareers?: Partial<Record<'acme' | 'beta', string[]>> } = {},
): Promise<TwoTenants> {
  const simulator = await startTestSimulator({
    seed: 23,
    companies: 2,
    careers: 2,
    skills: 0,
    eventsPerHour: 0,
    historyHours: 0,
    readsPerHour: 1_000_000,
  });
  const now = Date.now();
  simulator.companies[0]!.appendBurst('career', simulator.companies[0]!.careerIds[0]!, 5, {
    from: now - 600_000,
    to: now - 5_000,
  });
  simulator.companies[1]!.appendBurst('career', simulator.companies[1]!.careerIds[0]!, 8, {
    from: now - 600_000,
    to: now - 5_000,
  });
  const dir = makeTempDir();
  const tenantsDir = join(dir, 'tenants');
  mkdirSync(tenantsDir);
  const config = join(dir, 'changefeed.yaml');
  writeFileSync(
    config,
    [
      `stateDir: ${join(dir, 'state')}`,
      `tenants: { dir: ${tenantsDir} }`,
      `api: { baseUrl: "${simulator.url}" }`,
      'budget: { readsPerHour: 3600000, reserve: 0 }',
      'watch:',
      '  startFrom: "2000-01-01T00:00:00Z"',
      '  identityProviderEvents: false',
      '  pollIntervalSeconds: 1',
      '  schedule: { firstPollWithinSeconds: 0 }',
      ...(options.store
        ? [`store: { url: "${options.store.url}", schema: ${options.store.schema} }`, 'cluster: { leaseSeconds: 6 }']
        : []),
    ].join('\n'),
  );
  const sinkFile = (tenant: 'acme' | 'beta'): string => join(dir, `${tenant}.jsonl`);
  const careers = {
    acme: [...simulator.companies[0]!.careerIds, ...(options.extraCareers?.acme ?? [])],
    beta: [...simulator.companies[1]!.careerIds, ...(options.extraCareers?.beta ?? [])],
  };
  (['acme', 'beta'] as const).forEach((tenant, company) =>
    writeTenantFile(tenantsDir, tenant, {
      apiKey: simulator.companies[company]!.apiKey,
      sinkPath: sinkFile(tenant),
      lines: [`watch: { careers: { ids: [${careers[tenant].join(', ')}] } }`],
    }),
  );
  const store = { stateDir: join(dir, 'state'), ...(options.store ?? {}) };
  return { simulator, dir, config, tenantsDir, sinkFile, store, careers };
}

/**
 * On the PostgreSQL store, where `run --once` is refused: a replica runs in this process until both
 * tenants' events are delivered, then drains and stops, releasing its leases.
 */
export async function runReplicaUntilDelivered(set: TwoTenants): Promise<void> {
  const stop = new AbortController();
  let exited = false;
  const replica = runCliInProcess(
    ['run', '--config', set.config],
    { CHANGEFEED_INSTANCE_ID: 'replica-0', CHANGEFEED_API_KEY: '' },
    stop.signal,
  ).finally(() => (exited = true));
  const delivered = (): boolean => lines(set.sinkFile('acme')) === 5 && lines(set.sinkFile('beta')) === 8;
  let waited: unknown;
  try {
    await until(() => exited || delivered(), 30_000, 'both tenants delivered');
  } catch (error) {
    waited = error;
  }
  stop.abort();
  const { status, stderr } = await replica;
  if (waited !== undefined || status !== 0 || !delivered()) {
    const why = waited instanceof Error ? waited.message : `the replica exited ${status} before both were delivered`;
    throw new Error(`${why}; the replica logged:\n${stderr.slice(-4000)}`);
  }
}

/** Lines written to a file sink so far. */
export function lines(file: string): number {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).length : 0;
}

/** One `run --once` of both tenants; throws with its logs unless it exits `expected`. */
export async function runOnceCli(set: TwoTenants, expected = 0): Promise<void> {
  const run = await runCliInProcess(['run', '--once', '--config', set.config]);
  if (run.status !== expected) throw new Error(`run --once exited ${run.status}:\n${run.stderr.slice(-4000)}`);
}

/**
 * Every delivery of `tenant` to sink `out` made a dead letter, as if the sink had rejected each
 * for good: queued again from the journal, then marked dead. Returns how many.
 */
export async function deadLettersOf(set: TwoTenants, tenant: 'acme' | 'beta'): Promise<number> {
  const { stateDir, ...store } = set.store;
  const backend = await openStoreBackend({ stateDir, store: storeConfigSchema.parse(store) }, { mustExist: true });
  try {
    const tenantStore = await backend.tenantStore(tenant);
    await tenantStore.outbox.enqueueFromJournal('out', {}, Date.now());
    const pending = await tenantStore.outbox.pending('out', 0, 1000);
    await tenantStore.outbox.markDead(
      'out',
      pending.map((p) => ({ seq: p.seq, error: 'rejected for the test', status: 422 })),
      Date.now(),
    );
    return pending.length;
  } finally {
    await backend.close();
  }
}
