/**
 * The scheduling benchmark alone (`npx tsx bench/scheduling.ts [workload-index]`); `npm run bench`
 * runs it after the pipeline tables. A simulated day per seed and row on a ManualClock: the model
 * (the real poll loop, scheduler and budget, the service in process), then the real daemon over
 * loopback HTTP for the issue's workload (index 5 alone).
 */
import { printTable, type BenchRow } from './benchTable.js';
import {
  DAEMON_WORKLOAD,
  SCHEDULING_WORKLOADS,
  SEEDS,
  daemonRows,
  schedulingRows,
  sharedKeyRows,
} from './cases/schedulingPolicies.js';
import { checkDaemonTargets, checkTargets } from './schedulingTargets.js';

export async function runSchedulingBench(only?: number): Promise<void> {
  const rows: BenchRow[] = [];
  for (const [i, w] of SCHEDULING_WORKLOADS.entries()) {
    if (only === undefined || only === i) rows.push(...(await schedulingRows(w.name, w.workload)));
  }
  const days = `averages of ${SEEDS.length} simulated days (seeds ${SEEDS.join(', ')})`;
  printTable(`Scheduling: 501 logs, 900 requests/h, 300 events/h; delays after a 2-hour warm-up; ${days}`, rows);
  const shared = only === undefined || only === SCHEDULING_WORKLOADS.length ? await sharedKeyRows() : [];
  printTable('Scheduling with a shared key (another client spends 30% of the bucket)', shared);
  const lines = rows.length > 0 || shared.length > 0 ? checkTargets(rows, shared) : [];
  if (only === undefined || only === SCHEDULING_WORKLOADS.length + 1) {
    const real = await daemonRows();
    const model = rows.filter((r) => r.case === DAEMON_WORKLOAD && real.some((d) => d.policy === r.policy));
    printTable(
      `Scheduling, the real daemon (HTTP client, poll loop, SQLite store, file sink) against the simulator over ` +
        `loopback HTTP, in virtual time, next to the model; ${days}`,
      [...model.map((r) => ({ ...r, run: 'model' })), ...real.map((r) => ({ ...r, run: 'real daemon' }))].map(
        ({ case: name, run, ...rest }) => ({ case: name, run, ...rest }),
      ),
    );
    lines.push(...checkDaemonTargets(real));
  }
  console.log(`\nTargets:\n${lines.map((l) => `  ${l}`).join('\n')}`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = process.argv[2];
  await runSchedulingBench(arg === undefined ? undefined : Number(arg));
}
