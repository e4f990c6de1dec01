import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli, startDaemonProcess, type DaemonProcess } from '../support/daemonProcess.js';
import { writeCliConfig } from '../support/cliConfig.js';
import { runCliInProcess } from '../support/runCli.js';
import { makeTempDir } from '../support/tempDir.js';
import { startTestSimulator } from '../support/testSimulator.js';

let daemon: DaemonProcess | undefined;
afterEach(async () => {
  if (daemon && daemon.child.exitCode === null) {
    daemon.child.kill('SIGKILL');
    await daemon.exited();
  }
});

async function configFor(dir: string): Promise<{ file: string; env: Record<string, string> }> {
  const simulator = await startTestSimulator({
    seed: 61,
    careers: 2,
    skills: 1,
    eventsPerHour: 0,
    historyHours: 0,
    readsPerHour: 1_000_000,
  });
  const file = writeCliConfig(dir, simulator.url, {
    extra: ['watch: { careers: { discover: true }, skills: { discover: true } }'],
  });
  return { file, env: { CHANGEFEED_API_KEY: simulator.apiKey } };
}

// Two daemons on one state directory sent ~90% of webhooks twice; two racing starts crashed on a
// migration.
describe('one daemon per state directory', () => {
  it(
    'a second daemon exits at once naming the pid that holds the directory; after a kill -9 ' +
      'the lock is free again',
    async () => {
      const dir = makeTempDir();
      const { file, env } = await configFor(dir);
      daemon = startDaemonProcess(['--config', file], env);
      await daemon.waitForLog('changefeed running', 60_000);
      const second = await runCliInProcess(['run', '--config', file], env);
      expect(second.status).toBe(1);
      expect(second.stderr).toContain(
        `STATE_DIR_LOCKED: state directory ${join(dir, 'state')} held by pid ${daemon.child.pid}`,
      );
      daemon.child.kill('SIGKILL');
      await daemon.exited();
      const after = await runCliInProcess(['run', '--config', file, '--once'], env);
      expect(after.status, after.stderr).toBe(0);
    },
    180_000,
  );

  it(
    'of two racing starts on a fresh directory, one runs and the other is refused, without a ' + 'migration crash',
    async () => {
      const dir = makeTempDir();
      const { file, env } = await configFor(dir);
      // Two processes: the race is between two migrations' transactions, each in its own process.
      const results = await Promise.all([
        runCli(['run', '--config', file, '--once'], env),
        runCli(['run', '--config', file, '--once'], env),
      ]);
      const statuses = results.map((r) => r.status).sort();
      const refused = results.filter((r) => r.stderr.includes('STATE_DIR_LOCKED'));
      // Usually one is refused; if the first finished before the second started, both ran in turn.
      if (refused.length === 1) expect(statuses).toEqual([0, 1]);
      else expect(statuses).toEqual([0, 0]);
      for (const r of results) expect(r.stderr).not.toMatch(/SQLITE_|migration|no such table/i);
    },
    180_000,
  );
});
