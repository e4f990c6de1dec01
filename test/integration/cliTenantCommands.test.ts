import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliInProcess as runCli } from '../support/runCli.js';
import { deadLettersOf, lines, runOnceCli, twoTenants, type TwoTenants } from '../support/twoTenants.js';

/**
 * acme (5 events) and beta (8 events, and with `gone` a configured career that answers 404), each
 * polled once with its own key into its own SQLite store.
 */
async function polledTenants(options: { gone?: boolean } = {}): Promise<TwoTenants> {
  const set = await twoTenants(options.gone ? { extraCareers: { beta: ['car_gone'] } } : {});
  // Exit 1 with gone: beta's configured car_gone answered 404.
  await runOnceCli(set, options.gone ? 1 : 0);
  expect([lines(set.sinkFile('acme')), lines(set.sinkFile('beta'))]).toEqual([5, 8]);
  return set;
}

describe('commands on one tenant of a tenants directory (SQLite)', () => {
  it('plan --tenant plans the named tenant from its own store', async () => {
    const set = await polledTenants({ gone: true });
    for (const tenant of ['acme', 'beta'] as const) {
      const result = await runCli(['plan', '--config', set.config, '--tenant', tenant, '--no-discover', '--json']);
      expect(result.status, result.stderr).toBe(0);
      const report = JSON.parse(result.stdout) as {
        tenant: string;
        learnedLogs: number;
        busiest: { objectId: string }[];
      };
      expect(report.tenant).toBe(tenant);
      // Only the active logs of that tenant's store, each with a rate learned by the run.
      const active = set.careers[tenant].filter((id) => id !== 'car_gone');
      expect(report.busiest.map((l) => l.objectId).sort()).toEqual([...active].sort());
      expect(report.learnedLogs).toBe(active.length);
    }
    const text = await runCli(['plan', '--config', set.config, '--tenant', 'beta', '--no-discover']);
    expect(text.stdout).toContain('plan of tenant beta');
  });

  it('check --tenant validates the tenant file and reads its ids with its own key', async () => {
    const set = await twoTenants({ extraCareers: { beta: ['car_gone'] } });
    const acme = await runCli(['check', '--config', set.config, '--tenant', 'acme']);
    expect(acme.status, acme.stdout + acme.stderr).toBe(0);
    expect(acme.stdout).toContain(`config of tenant acme ${join(set.tenantsDir, 'acme.yaml')} is valid`);
    // acme's careers belong to company 0: read with beta's key they would answer 404.
    for (const id of set.careers.acme) expect(acme.stdout).toContain(id);
    expect(acme.stdout).toContain('all checks passed');

    const beta = await runCli(['check', '--config', set.config, '--tenant', 'beta']);
    expect(beta.status).toBe(1);
    expect(beta.stdout).toContain('car_gone');
    expect(beta.stdout).not.toContain(set.careers.acme[0]);
  });

  it("watch retry --tenant re-checks a gone log of the named tenant's store with its key", async () => {
    const set = await polledTenants({ gone: true });
    const notAcmes = await runCli(['watch', 'retry', '--config', set.config, '--tenant', 'acme', 'career', 'car_gone']);
    expect(notAcmes.status).toBe(1);
    expect(notAcmes.stdout).toContain('car_gone is not watched by this store');

    const stillGone = await runCli([
      'watch',
      'retry',
      '--config',
      set.config,
      '--tenant',
      'beta',
      'career',
      'car_gone',
    ]);
    expect(stillGone.status).toBe(1);
    expect(stillGone.stdout).toContain('still answers 404');

    // Company 1's, so only beta's key can read it.
    set.simulator.companies[1]!.addObject('career', 'car_gone');
    const back = await runCli(['watch', 'retry', '--config', set.config, '--tenant', 'beta', 'career', 'car_gone']);
    expect(back.status, back.stdout + back.stderr).toBe(0);
    expect(back.stdout).toContain('car_gone answers again');
  });

  it("replay --tenant re-delivers the named tenant's journal to its sink, not the other's", async () => {
    const set = await polledTenants();
    const args = ['replay', '--config', set.config, '--sink', 'out', '--since', '2000-01-01T00:00:00Z'];
    const beta = await runCli([...args, '--tenant', 'beta']);
    expect(beta.status, beta.stderr).toBe(0);
    expect(beta.stdout).toContain('queued 8 events from the journal for out');
    expect([lines(set.sinkFile('acme')), lines(set.sinkFile('beta'))]).toEqual([5, 16]);

    const acme = await runCli([...args, '--tenant', 'acme', '--queue-only']);
    expect(acme.stdout).toContain('queued 5 events');
    expect(lines(set.sinkFile('acme'))).toBe(5);
    const pending = await runCli(['status', '--config', set.config, '--tenant', 'acme', '--json']);
    const sinks = (JSON.parse(pending.stdout) as { sinks: { name: string; pending: number }[] }).sinks;
    expect(sinks.find((s) => s.name === 'out')?.pending).toBe(5);
  });

  it('dead-letters retry --tenant re-queues in the named tenant only', async () => {
    const set = await polledTenants();
    expect([await deadLettersOf(set, 'acme'), await deadLettersOf(set, 'beta')]).toEqual([5, 8]);
    const result = await runCli(['dead-letters', 'retry', '--config', set.config, '--tenant', 'beta', '--all']);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain('re-queued 8 dead letters');
    const acme = await runCli(['dead-letters', 'list', '--config', set.config, '--tenant', 'acme', '--json']);
    expect((JSON.parse(acme.stdout) as unknown[]).length).toBe(5);
  });
});

describe('the tenant of a command must exist and be valid', () => {
  const commands: string[][] = [
    ['plan', '--no-discover'],
    ['check'],
    ['watch', 'retry', 'career', 'car_x'],
    ['replay', '--sink', 'out', '--since', '2000-01-01T00:00:00Z'],
    ['status'],
    ['dead-letters', 'list'],
    ['quarantine', 'list'],
  ];

  it.each(commands)('%s names the tenants there are and the file it looked for (exit 2)', async (...command) => {
    const set = await twoTenants();
    const unknown = await runCli([...command, '--config', set.config, '--tenant', 'nope']);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain(
      `no tenant "nope": no file ${join(set.tenantsDir, 'nope.yaml')} (or .yml) (tenants: acme, beta)`,
    );
    const unnamed = await runCli([...command, '--config', set.config]);
    expect(unnamed.status).toBe(2);
    expect(unnamed.stderr).toContain('name the tenant with --tenant NAME (tenants: acme, beta)');
  });

  it('names the tenant and its file when the file does not validate', async () => {
    const set = await twoTenants();
    const file = join(set.tenantsDir, 'gamma.yaml');
    writeFileSync(file, 'api: { apiKey: gamma-key-0001 }\nwatch:\n  concurrency: 99\n');
    for (const command of commands) {
      const result = await runCli([...command, '--config', set.config, '--tenant', 'gamma']);
      expect(result.status, command.join(' ')).toBe(2);
      expect(result.stderr).toContain(`tenant gamma: tenant "gamma" (${file}): invalid configuration`);
      expect(result.stderr).toContain(`${file}:3:3`);
      expect(result.stderr).not.toContain('gamma-key-0001');
    }
  });
});
