import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const SCRIPT = join(ROOT, 'scripts', 'container', 'replayDockerfile.sh');
const inCi = (process.env.CI ?? '') !== '' && !['0', 'false'].includes(process.env.CI!.toLowerCase());
const enabled = inCi || process.env.CHANGEFEED_CONTAINER_TEST === '1';
const SKIP_REASON =
  'replays the Dockerfile (npm ci with a native build: 3 to 4 minutes here); runs in CI, or ' +
  'locally with CHANGEFEED_CONTAINER_TEST=1';
// Without the health server there is no readiness to probe; once it exists the replay probes it.
const probe = existsSync(join(ROOT, 'src', 'observe', 'healthServer.ts'));
// Measured on this machine: 3 to 4 minutes, most of it npm ci compiling better-sqlite3 while the
// other test worker runs; 5 minutes left too little room on a loaded CI machine.
const TIMEOUT_MS = 8 * 60_000;

if (!enabled) console.info(`test/container/replayDockerfile.test.ts skipped: ${SKIP_REASON}`);

let running: ChildProcess | undefined;
afterEach(() => {
  // The script runs in its own process group; SIGTERM reaches npm and node too, and its trap cleans up.
  if (running?.pid !== undefined && running.exitCode === null && running.signalCode === null)
    process.kill(-running.pid, 'SIGTERM');
  running = undefined;
});

function replay(args: string[], timeoutMs: number): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [SCRIPT, ...args], { cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    running = child;
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => {
      output += `\n[test] no result after ${timeoutMs / 1000} s: SIGTERM to the replay\n`;
      process.kill(-child.pid!, 'SIGTERM');
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe('the container image, replayed without Docker', () => {
  it(
    'builds from the context alone, keeps only production dependencies, delivers, answers ' +
      'readiness and exits 0 on SIGTERM',
    async (context) => {
      context.skip(!enabled, SKIP_REASON);
      const { code, output } = await replay(probe ? [] : ['--no-probe'], TIMEOUT_MS - 15_000);
      expect(code, output.slice(-8000)).toBe(0);
      console.info(output.slice(output.indexOf('== timings')));
      expect(output).toContain('none of');
      expect(output).toMatch(
        /better-sqlite3 [\d.]+, SQLite [\d.]+, addon \S+\/app\/node_modules\/better-sqlite3\/build\/Release\/better_sqlite3\.node/,
      );
      expect(output).toContain('first events delivered');
      expect(output).toContain('daemon exited 0 after SIGTERM');
      if (probe) expect(output).toContain('/readyz and /healthz answered 200');
    },
    TIMEOUT_MS,
  );
});
