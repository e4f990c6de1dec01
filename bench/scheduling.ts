/**
 * The scheduling benchmark alone (`npx tsx bench/scheduling.ts [workload-index]`); `npm run bench
 * -- scheduling` runs the same. A simulated day per seed and row on a ManualClock: the model (the
 * real poll loop, scheduler and budget, the service in process), then the real daemon over
 * loopback HTTP for the issue's workload (index 5 alone). The days are independent: they run in a
 * pool of child processes, one per core, the real daemon's (the longest) first. Only the days a
 * target judges are run (schedulingPolicies.ts): 42 days, about 23 minutes of CPU.
 */
import { loadavg } from 'node:os';
import { judged, printTable, type BenchRow } from './benchTable.js';
import {
  DAEMON_WORKLOAD,
  POLICY,
  SCHEDULING_WORKLOADS,
  SEEDS,
  daemonRows,
  schedulingRows,
  sharedKeyRows,
} from './cases/schedulingPolicies.js';
import { DayPool } from './cases/schedulingDayPool.js';
import { checkDaemonTargets, checkTargets, freshnessGoal } from './schedulingTargets.js';

export async function runSchedulingBench(only?: number): Promise<void> {
  const started = performance.now();
  const pool = new DayPool();
  const runDay = pool.run.bind(pool);
  const includes = (index: number): boolean => only === undefined || only === index;
  try {
    // Asked for in this order, the daemon's days first: the pool starts days in the order asked.
    const real = includes(SCHEDULING_WORKLOADS.length + 1) ? daemonRows(runDay) : undefined;
    const model = Promise.all(
      SCHEDULING_WORKLOADS.map((w, i) =>
        includes(i) ? schedulingRows(w.name, w.workload, runDay) : Promise.resolve([]),
      ),
    );
    const sharedRows = includes(SCHEDULING_WORKLOADS.length) ? sharedKeyRows(runDay) : Promise.resolve([]);
    // Every promise is awaited below; one that fails first must not go unhandled meanwhile.
    for (const p of [real, model, sharedRows]) p?.catch(() => undefined);

    const rows: BenchRow[] = (await model).flat();
    const days = `averages of ${SEEDS.length} simulated days (seeds ${SEEDS.join(', ')})`;
    printTable(`Scheduling: 501 logs, 900 requests/h, 300 events/h; delays after a 2-hour warm-up; ${days}`, rows);
    const shared = await sharedRows;
    printTable('Scheduling with a shared key (another client spends 30% of the bucket)', shared);
    const lines = rows.length > 0 || shared.length > 0 ? checkTargets(rows, shared) : [];
    if (real) {
      const daemon = await real;
      const goal = freshnessGoal(daemon.find((r) => r.policy === POLICY.roundRobin));
      const modelled = rows.filter((r) => r.case === DAEMON_WORKLOAD && daemon.some((d) => d.policy === r.policy));
      printTable(
        `Scheduling, the real daemon (HTTP client, poll loop, SQLite store, file sink) against the simulator over ` +
          `loopback HTTP, in virtual time, next to the model; ${days}`,
        [
          ...modelled.map((r) => ({ ...r, run: 'model' })),
          ...daemon.map((r) => ({ ...(r.policy === POLICY.ours ? judged(r, goal) : r), run: 'real daemon' })),
        ].map(({ case: name, run, ...rest }) => ({ case: name, run, ...rest })),
      );
      lines.push(...checkDaemonTargets(daemon));
    }
    console.log(`\nTargets:\n${lines.map((l) => `  ${l}`).join('\n')}`);
  } finally {
    pool.close();
  }
  const minutes = (performance.now() - started) / 60_000;
  const { days, cpuMinutes } = pool.finished;
  console.log(
    `\nScheduling: ${days} simulated days in ${minutes.toFixed(1)} min on ${pool.size} processes ` +
      `(${cpuMinutes.toFixed(1)} min of CPU; load ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')})`,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = process.argv[2];
  await runSchedulingBench(arg === undefined ? undefined : Number(arg));
}
