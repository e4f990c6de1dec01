import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { LeaseLostError } from '../../src/cluster/writeFence.js';
import type { TenantConfig } from '../../src/config/tenantConfigSchema.js';
import { TenantSupervisor } from '../../src/daemon/tenantSupervisor.js';
import { noopLogger } from '../support/noopLogger.js';
import { ProcessMetrics } from '../../src/observe/processMetrics.js';
import { SqliteStoreBackend } from '../../src/store/sqlite/sqliteStoreBackend.js';
import type { Tenant } from '../../src/tenants/tenant.js';
import { simulatorConfig } from '../support/daemonHarness.js';
import { until } from '../support/daemonProcess.js';
import { makeTempDir } from '../support/tempDir.js';
import { receiver, SECRET } from '../support/webhookHarness.js';
import { simulatedCompanies } from './replicaHarness.js';

let supervisor: TenantSupervisor | undefined;
afterEach(async () => {
  await supervisor?.stopAll();
  supervisor = undefined;
});

it("a tenant's runtime asks its lease before every request to the service, and stops polling once refused", async () => {
  const simulator = await simulatedCompanies(7, 1);
  const stateDir = makeTempDir();
  const config = simulatorConfig({
    simulator,
    stateDir,
    overrides: { sinks: [{ name: 'file', type: 'file', path: join(stateDir, 'company-0.jsonl') }] },
  });
  // The lease as the keeper would judge it: valid, then past its local deadline.
  let leaseValid = true;
  let sent = 0;
  let refused = 0;
  const guard = (): void => {
    if (leaseValid) {
      sent++;
      return;
    }
    refused++;
    throw new LeaseLostError('company-0', 'past its local deadline', 'the request was not sent');
  };
  const backend = new SqliteStoreBackend(config);
  supervisor = new TenantSupervisor({
    backend,
    options: { logger: noopLogger, metrics: new ProcessMetrics() },
    configOf: () => config,
    requestGuardOf: () => guard,
  });
  const tenant: Tenant<TenantConfig> = {
    name: 'company-0',
    file: undefined,
    config,
    keyFingerprint: 'test',
  };
  try {
    await supervisor.start(tenant, { rethrow: true });
    const runtime = supervisor.runtime('company-0')!;
    await until(() => simulator.requests.length >= 3, 30_000, 'the tenant polling');

    leaseValid = false;
    await until(() => !runtime.alive, 30_000, 'the runtime stopped for its lease');
    await supervisor.stop('company-0');
    expect(refused).toBeGreaterThanOrEqual(1);
    // Every request the service saw was let through by the lease twice (handed to the pool, then
    // written); none left after the refusal.
    expect(simulator.requests.length).toBeLessThanOrEqual(Math.floor(sent / 2));
    expect(simulator.requests.length).toBeGreaterThanOrEqual(3);
  } finally {
    await supervisor.stopAll();
    await backend.close();
  }
}, 60_000);

it('a tenant whose lease was lost while it started sends the service nothing, not even its ping', async () => {
  const simulator = await simulatedCompanies(8, 1);
  const stateDir = makeTempDir();
  const config = simulatorConfig({
    simulator,
    stateDir,
    overrides: { sinks: [{ name: 'file', type: 'file', path: join(stateDir, 'company-0.jsonl') }] },
  });
  // A replica resumed after a pause that caught the tenant starting: the lease's local deadline
  // passed, and the start goes on from where it was (the store prepared, the ping next).
  const backend = new SqliteStoreBackend(config);
  supervisor = new TenantSupervisor({
    backend,
    options: { logger: noopLogger, metrics: new ProcessMetrics() },
    configOf: () => config,
    requestGuardOf: () => () => {
      throw new LeaseLostError('company-0', 'past its local deadline', 'the request was not sent');
    },
  });
  try {
    await supervisor.start({ name: 'company-0', file: undefined, config, keyFingerprint: 'test' });
    expect(simulator.requests.map((r) => r.path)).toEqual([]);
    expect(supervisor.startFailures.get('company-0')).toMatch(/lease of tenant "company-0" lost/);
  } finally {
    await supervisor.stopAll();
    await backend.close();
  }
});

it("a tenant's sink retry due once its lease is past the local deadline is not written to the sink", async () => {
  const simulator = await simulatedCompanies(9, 1);
  const company = simulator.companies[0]!;
  // Performed a minute ago: read by the first poll of its career, which backfills from 2000.
  const performedAt = new Date(Date.now() - 60_000).toISOString();
  company.appendEntries('career', company.careerIds[0]!, [{ event: 'level_added', performedAt }]);
  // The first webhook is held in flight, then answered 503: the endpoint is probed again seconds later.
  let answerFirst: (() => void) | undefined;
  const hook = await receiver({
    respond: (_request, count) =>
      count === 1 ? new Promise((resolve) => (answerFirst = () => resolve({ status: 503 }))) : undefined,
  });
  const stateDir = makeTempDir();
  const config = simulatorConfig({
    simulator,
    stateDir,
    startFrom: '2000-01-01T00:00:00Z',
    overrides: {
      // Every log polled once at the start, then not for an hour: after the lease's refusal no
      // poll is there to stop the tenant, only the sink's own write.
      watch: { pollIntervalSeconds: 3600, schedule: { firstPollWithinSeconds: 0 } },
      sinks: [{ name: 'hook', type: 'webhook', url: hook.url, secret: SECRET }],
    },
  });
  // The lease as the keeper would judge it on a replica resumed after a pause: past its local
  // deadline, the timer that drops it not run yet (I/O and earlier timers run first).
  let leaseValid = true;
  const refusals: string[] = [];
  const guard = (refused?: string): void => {
    if (leaseValid) return;
    const error = new LeaseLostError('company-0', 'past its local deadline', refused);
    refusals.push(error.message);
    throw error;
  };
  const backend = new SqliteStoreBackend(config);
  supervisor = new TenantSupervisor({
    backend,
    options: { logger: noopLogger, metrics: new ProcessMetrics() },
    configOf: () => config,
    requestGuardOf: () => guard,
  });
  try {
    await supervisor.start({ name: 'company-0', file: undefined, config, keyFingerprint: 'test' }, { rethrow: true });
    const runtime = supervisor.runtime('company-0')!;
    await until(() => answerFirst !== undefined, 30_000, 'the first batch at the receiver');
    leaseValid = false;
    answerFirst!();
    await until(() => !runtime.alive || hook.count > 1, 30_000, 'the tenant stopped, or its retry written');
    expect(hook.count).toBe(1);
    expect(refusals).toEqual([expect.stringMatching(/not written to sink "hook"/)]);
  } finally {
    await supervisor.stopAll();
    await backend.close();
  }
}, 60_000);
