/**
 * One day of the real daemon against the simulator, for looking closer at one seed or setting:
 * `npx tsx bench/schedulingDaemonDay.ts [seed] [round-robin|adaptive] [hours] [schedule JSON] [latency ms]`,
 * e.g. `npx tsx bench/schedulingDaemonDay.ts 8 adaptive 24 '{"historyHours":0}'`.
 */
import { simulateDaemonDay } from './cases/schedulingDaemon.js';

const [seed = '7', policy = 'adaptive', hours = '24', schedule = '{}', latencyMs = '0'] = process.argv.slice(2);
const started = Date.now();
const day = await simulateDaemonDay(
  {
    workload: { kind: 'zipf', s: 1 },
    seed: Number(seed),
    careers: 400,
    skills: 100,
    eventsPerHour: 300,
    bucketPerHour: 1000,
    otherClientPerHour: 0,
    hours: Number(hours),
    warmupHours: 2,
    serviceHistoryHours: 168,
    schedule: { policy, ...(JSON.parse(schedule) as object) },
  },
  { latencyMs: Number(latencyMs) },
);
const { trueRates: _rates, ...figures } = day;
console.log(
  JSON.stringify({ seed, policy, schedule, latencyMs, ...figures, realSeconds: (Date.now() - started) / 1000 }),
);
