/**
 * The scheduling benchmark alone (`npx tsx bench/scheduling.ts [workload-index]`); `npm run bench`
 * runs it after the pipeline tables. A simulated day per row on a ManualClock, seeded.
 */
import { printTable, type BenchRow } from './benchTable.js';
import { SCHEDULING_WORKLOADS, schedulingRows, sharedKeyRows } from './cases/schedulingPolicies.js';

export async function runSchedulingBench(only?: number): Promise<void> {
  const rows: BenchRow[] = [];
  for (const [i, w] of SCHEDULING_WORKLOADS.entries()) {
    if (only === undefined || only === i) rows.push(...(await schedulingRows(w.name, w.workload)));
  }
  printTable('Scheduling: a simulated day, 501 logs, 900 requests/h, 300 events/h; delays after a 2-hour warm-up', rows);
  if (only === undefined || only === SCHEDULING_WORKLOADS.length) {
    printTable('Scheduling with a shared key (another client spends 30% of the bucket)', await sharedKeyRows());
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = process.argv[2];
  await runSchedulingBench(arg === undefined ? undefined : Number(arg));
}
