import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** The kernel's clock ticks per second for /proc/<pid>/stat (USER_HZ, 100 on Linux). */
const CLOCK_TICKS = 100;

/** Resident memory now and at its peak (VmRSS, VmHWM), MiB. */
export function memoryMiB(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string): number => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? Number.NaN);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

/** CPU seconds the process has used, user plus system (/proc/<pid>/stat fields 14 and 15). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces; the fields after its closing parenthesis do not.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** Sum of every series of each metric named, over all labels (tenants, logs, outcomes). */
export function sumMetrics(text: string, names: readonly string[]): Record<string, number> {
  const sums: Record<string, number> = Object.fromEntries(names.map((n) => [n, 0]));
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const name = /^[a-z_]+/.exec(line)?.[0];
    if (name === undefined || !(name in sums)) continue;
    sums[name] = (sums[name] ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sums;
}

/** Sum of the series of `name` whose labels include `label` (e.g. `status="429"`). */
export function sumMetricWhere(text: string, name: string, label: string): number {
  let sum = 0;
  for (const line of text.split('\n'))
    if (line.startsWith(`${name}{`) && line.includes(label)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}

/** A TCP port free on loopback right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}
