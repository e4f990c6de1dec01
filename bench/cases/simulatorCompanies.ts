import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchRow } from '../benchTable.js';

const ROOT = join(import.meta.dirname, '..', '..');

function rssMiB(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? Number.NaN);
  return kb / 1024;
}

async function drain(res: Response): Promise<void> {
  if (!res.ok) throw new Error(`simulator answered ${res.status}`);
  await res.arrayBuffer();
}

/**
 * RSS of `changefeed simulate --companies N` (the compiled CLI, a process of its own) with 20
 * careers and 5 skills per company, the bench: after start, then after every company's
 * first reads (its discovery list, two career logs and the identity-provider log), which build its
 * `historyHours` of activity. Entries dominate: about 0.55 KB each, so the rate per company decides.
 */
export async function simulatorCompanies(companies: number, eventsPerHour: number): Promise<BenchRow> {
  const args = ['simulate', '--port', '0', '--companies', String(companies), '--careers', '20', '--skills', '5'];
  const child = spawn(
    process.execPath,
    [join(ROOT, 'bin/changefeed.js'), ...args, '--events-per-hour', String(eventsPerHour)],
    {
      cwd: ROOT,
      env: { ...process.env, CHANGEFEED_CONFIG: '' },
      stdio: ['ignore', 'pipe', 'ignore'],
    },
  );
  try {
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    const keyLines = (): RegExpMatchArray[] => [...out.matchAll(/^company \d+ CHANGEFEED_API_KEY=(\S+)$/gm)];
    const started = Date.now();
    while (keyLines().length < companies) {
      if (child.exitCode !== null) throw new Error('changefeed simulate exited early');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const startMs = Date.now() - started;
    const pid = child.pid as number;
    const afterStart = rssMiB(pid);
    const url = /^CHANGEFEED_BASE_URL=(\S+)$/m.exec(out)?.[1] ?? '';
    const readStarted = Date.now();
    for (const [, key] of keyLines()) {
      const headers = { authorization: `Bearer ${key}`, 'user-agent': 'skills-changefeed/bench (bench-0)' };
      const list = await fetch(`${url}/api/v1/careers`, { headers });
      if (!list.ok) throw new Error(`simulator answered ${list.status}`);
      const careers = ((await list.json()) as { data: Array<{ id: string }> }).data;
      for (const career of careers.slice(0, 2))
        await drain(await fetch(`${url}/api/v1/careers/${career.id}/activity?limit=200`, { headers }));
      await drain(await fetch(`${url}/api/v1/identity-provider-events?limit=200`, { headers }));
    }
    return {
      case: `${companies.toLocaleString('en-US')} companies, ${eventsPerHour} events/h each`,
      'start (s)': startMs / 1000,
      'RSS after start (MiB)': Math.round(afterStart),
      'first reads of all (s)': (Date.now() - readStarted) / 1000,
      'RSS with history (MiB)': Math.round(rssMiB(pid)),
    };
  } finally {
    child.kill('SIGTERM');
  }
}
