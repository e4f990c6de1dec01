import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { until } from '../support/daemonProcess.js';
import { writeCliConfig } from '../support/cliConfig.js';
import { makeTempDir } from '../support/tempDir.js';
import { startTestSimulator } from '../support/testSimulator.js';

const ROOT = join(import.meta.dirname, '..', '..');
let npm: ChildProcess | undefined;

afterEach(() => {
  // The whole group: npm and whatever it started.
  if (npm?.pid !== undefined && npm.exitCode === null) process.kill(-npm.pid, 'SIGKILL');
});

/** Pids whose parent is `pid`, from /proc (Linux, as CI). */
function childrenOf(pid: number): number[] {
  const tasks = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
  return tasks === '' ? [] : tasks.split(/\s+/).map(Number);
}

// The documented development command is `npm run changefeed -- run`. A signal sent to the process
// npm started must reach the daemon: through a tsx wrapper, SIGHUP killed the wrapper and left the
// daemon orphaned and not reloaded.
describe('npm run changefeed -- run', () => {
  it('is the daemon itself, so SIGHUP to the process npm started reloads the configuration', async () => {
    const simulator = await startTestSimulator({
      seed: 3,
      careers: 1,
      skills: 0,
      eventsPerHour: 0,
      historyHours: 0,
      readsPerHour: 1_000_000,
    });
    const dir = makeTempDir();
    const config = writeCliConfig(dir, simulator.url);
    let logs = '';
    npm = spawn('npm', ['run', '--silent', 'changefeed', '--', 'run', '--config', config], {
      cwd: ROOT,
      env: {
        ...process.env,
        CHANGEFEED_CONFIG: '',
        CHANGEFEED_API_KEY: simulator.apiKey,
        CHANGEFEED_LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    npm.stdout?.on('data', (c: Buffer) => (logs += c.toString()));
    npm.stderr?.on('data', (c: Buffer) => (logs += c.toString()));
    await until(() => logs.includes('changefeed running'), 60_000, 'the daemon running');

    const started = childrenOf(npm.pid as number);
    expect(started).toHaveLength(1);
    const daemonPid = started[0] as number;
    // pino writes the pid of the process that logs: the daemon is the process npm started.
    expect(logs).toContain(`"pid":${daemonPid}`);

    process.kill(daemonPid, 'SIGHUP');
    await until(() => logs.includes('SIGHUP: configuration is valid'), 30_000, 'the reload log line');
    await until(() => logs.split('changefeed running').length === 3, 30_000, 'the daemon running again');
    expect(childrenOf(npm.pid as number)).toEqual([daemonPid]);

    const exited = new Promise<number | null>((resolve) => npm?.once('exit', resolve));
    process.kill(daemonPid, 'SIGTERM');
    expect(await exited).toBe(0);
  }, 120_000);
});
