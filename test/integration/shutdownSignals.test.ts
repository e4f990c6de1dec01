import { describe, expect, it } from 'vitest';
import { runBundledScript } from '../support/bundledScript.js';

/** Runs a process whose stop takes `stopMs` and that receives SIGINT at each of `atMs`; returns its exit code and log. */
async function signalled(atMs: number[], stopMs: number): Promise<{ status: number | null; log: string }> {
  const script = `
    import { onShutdownSignals } from './src/cli/shutdownSignals.ts';
    const logger = { info: (o, m) => console.log(m), warn: (o, m) => console.log(m), error: (o, m) => console.log(m) };
    onShutdownSignals(() => new Promise((r) => setTimeout(r, ${stopMs})), logger, 20000);
    for (const ms of ${JSON.stringify(atMs)}) setTimeout(() => process.kill(process.pid, 'SIGINT'), ms);
    setInterval(() => undefined, 1000);
  `;
  const result = await runBundledScript(script);
  return { status: result.status, log: result.stdout + result.stderr };
}

// Ctrl-C under `npm run changefeed -- run` reaches the daemon twice at once (from the terminal's
// process group and forwarded by npm): it was taken as a second request and the daemon exited
// without draining.
describe('shutdown signals', () => {
  it('two SIGINTs at once are one request: the daemon drains and exits 0', async () => {
    const { status, log } = await signalled([100, 101], 1_000);
    expect(log).not.toContain('second signal');
    expect(status).toBe(0);
  }, 60_000);

  it('a second SIGINT later still exits at once with 1', async () => {
    const { status, log } = await signalled([100, 2500], 5_000);
    expect(log).toContain('second signal: exiting now');
    expect(status).toBe(1);
  }, 60_000);
});
