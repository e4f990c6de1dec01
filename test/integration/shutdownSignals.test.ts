import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

/** Runs a process whose stop takes 5 s and that receives SIGINT at each of `atMs`; returns its exit code and log. */
function signalled(atMs: number[]): { status: number | null; log: string } {
  const script = `
    import { onShutdownSignals } from './src/cli/shutdownSignals.ts';
    const logger = { info: (o, m) => console.log(m), warn: (o, m) => console.log(m), error: (o, m) => console.log(m) };
    onShutdownSignals(() => new Promise((r) => setTimeout(r, 5000)), logger, 20000);
    for (const ms of ${JSON.stringify(atMs)}) setTimeout(() => process.kill(process.pid, 'SIGINT'), ms);
    setInterval(() => undefined, 1000);
  `;
  const result = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: result.status, log: result.stdout + result.stderr };
}

// Ctrl-C under `npm run changefeed -- run` reaches the daemon twice at once (from the terminal's
// process group and forwarded by npm): it was taken as a second request and the daemon exited
// without draining.
describe('shutdown signals', () => {
  it('two SIGINTs at once are one request: the daemon drains and exits 0', () => {
    const { status, log } = signalled([100, 101]);
    expect(log).not.toContain('second signal');
    expect(status).toBe(0);
  }, 60_000);

  it('a second SIGINT later still exits at once with 1', () => {
    const { status, log } = signalled([100, 2500]);
    expect(log).toContain('second signal: exiting now');
    expect(status).toBe(1);
  }, 60_000);
});
