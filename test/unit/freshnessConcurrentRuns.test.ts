import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const bench = fileURLToPath(new URL('../../bench/schedulingDaemonWallClock.ts', import.meta.url));

/** Processes alive now whose command line holds `marker`, by pid. */
function processesWith(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').includes(marker))
        pids.push(Number(entry));
    } catch {
      // Gone while it was read.
    }
  }
  return pids;
}

describe('the freshness bench with --concurrent', () => {
  // Each run is a process of its own for hours of a shared machine: one run failing must not
  // leave the others running after the bench has exited with the failure.
  it('ends the other runs when one fails, and exits only after them', async () => {
    // A Date resolution (at most 3,600 s) no other run uses marks this test's processes.
    const marker = `--date-resolution-s ${1_000 + (process.pid % 2_000)}`;
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        bench,
        '--concurrent',
        ...['--seeds', '7', '--hours', '3', '--policies', 'round-robin,no-such-policy'],
        ...marker.split(' '),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.stdout.resume();
    const closed = once(child, 'close');
    let left: number[] = [];
    try {
      // 'exit', not 'close': a run left behind would hold the stderr pipe open.
      const [code] = (await once(child, 'exit')) as [number | null];
      expect(code).not.toBe(0);
      left = processesWith(marker);
    } finally {
      for (const pid of processesWith(marker)) process.kill(pid, 'SIGTERM');
    }
    expect(left).toEqual([]);
    await closed;
    expect(stderr).toContain('no-such-policy');
  }, 60_000);
});
