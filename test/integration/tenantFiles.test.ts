import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadMainConfig } from '../../src/config/mainConfig.js';
import { ChangefeedDaemon } from '../../src/daemon/changefeedDaemon.js';
import { noopLogger } from '../support/noopLogger.js';
import { until } from '../support/daemonProcess.js';
import { makeTempDir } from '../support/tempDir.js';
import { startTestSimulator } from '../support/testSimulator.js';
import { writeTenantFile } from '../support/tenantFile.js';

let daemon: ChangefeedDaemon | undefined;
afterEach(async () => {
  await daemon?.stop();
  daemon = undefined;
});

describe('tenant files added and removed while the daemon runs (SQLite, one process)', () => {
  it('starts an added tenant and stops a removed one within a rescan, the others going on', async () => {
    const simulator = await startTestSimulator({
      seed: 41,
      companies: 3,
      careers: 1,
      skills: 0,
      eventsPerHour: 0,
      historyHours: 0,
      readsPerHour: 1_000_000,
    });
    const dir = makeTempDir();
    const tenantsDir = join(dir, 'tenants');
    mkdirSync(tenantsDir);
    const writeTenant = (company: number): void =>
      writeTenantFile(tenantsDir, `company-${company}`, {
        apiKey: simulator.companies[company]!.apiKey,
        sinkPath: join(dir, `company-${company}.jsonl`),
      });
    writeTenant(0);
    writeTenant(1);
    const main = loadMainConfig({
      env: {},
      overrides: {
        'api.baseUrl': simulator.url,
        'watch.careers.discover': true,
        'watch.pollIntervalSeconds': 1,
        'watch.schedule.firstPollWithinSeconds': 0,
        'budget.readsPerHour': 3_600_000,
        'budget.reserve': 0,
        stateDir: join(dir, 'state'),
        'tenants.dir': tenantsDir,
        'tenants.rescanSeconds': 1,
      },
    });
    daemon = new ChangefeedDaemon(main, { logger: noopLogger });
    await daemon.start();
    const requestsOf = (company: number, since = 0) =>
      simulator.requests.filter((r) => r.company === company && r.at >= since).length;
    await until(() => requestsOf(0) > 0 && requestsOf(1) > 0, 30_000, 'both tenants polling');
    expect(requestsOf(2)).toBe(0);

    writeTenant(2);
    await until(() => requestsOf(2) > 0, 30_000, 'the added tenant polling');
    expect(daemon.readiness().some((c) => c.name.startsWith('company-2/'))).toBe(true);

    rmSync(join(tenantsDir, 'company-1.yaml'));
    await until(
      () => !daemon!.readiness().some((c) => c.name.startsWith('company-1/')),
      30_000,
      'the removed tenant stopped',
    );
    const stoppedAt = Date.now();
    const before0 = requestsOf(0, stoppedAt);
    await until(() => requestsOf(0, stoppedAt) > before0 + 2, 30_000, 'the remaining tenants polling on');
    expect(requestsOf(1, stoppedAt + 100)).toBe(0);
  }, 90_000);
});
