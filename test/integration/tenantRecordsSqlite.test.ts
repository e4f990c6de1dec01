import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { until } from '../support/daemonProcess.js';
import { runCliInProcess as runCli, startCliInProcess, type InProcessCommand } from '../support/runCli.js';
import { writeTenantFile } from '../support/tenantFile.js';
import { lines, twoTenants } from '../support/twoTenants.js';

const running: InProcessCommand[] = [];
afterEach(async () => {
  for (const daemon of running.splice(0)) await daemon.stop();
});

function start(config: string): InProcessCommand {
  const daemon = startCliInProcess(['run', '--config', config]);
  running.push(daemon);
  return daemon;
}

async function stop(daemon: InProcessCommand): Promise<void> {
  expect(await daemon.stop()).toBe(0);
}

/** The tenants a daemon's log reports with the duplicate-key problem. */
const refusedForKey = (daemon: InProcessCommand): string[] =>
  daemon
    .logs()
    .split('\n')
    .filter((line) => line.includes('same API key'))
    .map((line) => (JSON.parse(line) as { tenant: string }).tenant);

describe('tenant records on a SQLite store', () => {
  it('a restarted daemon keeps a key with the tenant that owned it, and an invalid file on its last valid text', async () => {
    const set = await twoTenants();
    const first = start(set.config);
    await until(() => lines(set.sinkFile('acme')) === 5 && lines(set.sinkFile('beta')) === 8, 30_000, 'both delivered');

    // A copy of acme's key, first by name; and beta's file turned invalid.
    const copySink = join(set.dir, 'a-copy.jsonl');
    writeTenantFile(set.tenantsDir, 'a-copy', { apiKey: set.simulator.companies[0]!.apiKey, sinkPath: copySink });
    writeFileSync(join(set.tenantsDir, 'beta.yaml'), 'api: { apiKey: [\n');
    await until(() => refusedForKey(first).includes('a-copy'), 30_000, 'the copy refused');
    await stop(first);

    const second = start(set.config);
    await second.waitForLog('"msg":"changefeed running"', 30_000);
    await until(() => refusedForKey(second).length > 0, 30_000, 'the duplicate key reported after the restart');
    expect(refusedForKey(second)).toEqual(['a-copy']);
    expect(second.logs()).toContain('it keeps running with its last valid configuration, kept in the store');
    // Both companies still served after the restart: new entries arrive in their own sinks only.
    for (const company of set.simulator.companies)
      company.appendEntries('career', company.careerIds[0]!, [{ event: 'level_added' }]);
    await until(() => lines(set.sinkFile('acme')) === 6 && lines(set.sinkFile('beta')) === 9, 30_000, 'new entries');
    expect(lines(copySink)).toBe(0);

    // `tenants list` gives the daemon's verdicts: it reads the same records.
    const listed = await runCli(['tenants', 'list', '--json', '--config', set.config]);
    const rows = (JSON.parse(listed.stdout) as { tenants: { name: string; problems: { code: string }[] }[] }).tenants;
    expect(rows.map((r) => `${r.name}:${r.problems.map((p) => p.code).join(',')}`)).toEqual([
      'a-copy:TENANT_DUPLICATE_API_KEY',
      'acme:',
      'beta:CONFIG_INVALID',
    ]);
    expect(listed.stdout).toContain('it keeps running with its last valid configuration, kept in the store');
  }, 120_000);
});
