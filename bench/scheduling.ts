/**
 * The scheduling benchmark alone (`npx tsx bench/scheduling.ts [workload-index]`); `npm run bench`
 * runs it after the pipeline tables. A simulated day per seed and row on a ManualClock.
 */
import { printTable, type BenchRow } from './benchTable.js';
import { SCHEDULING_WORKLOADS, SEEDS, schedulingRows, sharedKeyRows } from './cases/schedulingPolicies.js';
import { checkTargets } from './schedulingTargets.js';

export async function runSchedulingBench(only?: number): Promise<void> {
  const rows: BenchRow[] = [];
  for (const [i, w] of SCHEDULING_WORKLOADS.entries()) {
    if (only === undefined || only === i) rows.push(...(await schedulingRows(w.name, w.workload)));
  }
  const days = `averages of ${SEEDS.length} simulated days (seeds ${SEEDS.join(', ')})`;
  printTable(`Scheduling: 501 logs, 900 requests/h, 300 events/h; delays after a 2-hour warm-up; ${days}`, rows);
  const shared = only === undefined || only === SCHEDULING_WORKLOADS.length ? await sharedKeyRows() : [];
  printTable('Scheduling with a shared key (another client spends 30% of the bucket)', shared);
  console.log(
    `\nTargets:\n${checkTargets(rows, shared)
      .map((l) => `  ${l}`)
      .join('\n')}`,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = process.argv[2];
  await runSchedulingBench(arg === undefined ? undefined : Number(arg));
}
