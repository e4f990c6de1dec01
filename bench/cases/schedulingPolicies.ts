import { squareRootOptimumMeanHours } from '../../src/poll/pollAllocation.js';
import type { Workload } from '../../src/simulator/simulatorOptions.js';
import type { BenchRow } from '../benchTable.js';
import { simulateDay, type DayOptions, type DayResult } from './schedulingDay.js';

/** The setting: 500 careers and skills plus the identity-provider log, 900 requests/hour, 300 events/hour. */
const BASE: Omit<DayOptions, 'workload' | 'schedule'> = {
  seed: 7,
  careers: 400,
  skills: 100,
  eventsPerHour: 300,
  bucketPerHour: 1000,
  otherClientPerHour: 0,
  hours: 24,
  warmupHours: 2,
};

export const SCHEDULING_WORKLOADS: Array<{ name: string; workload: Workload }> = [
  { name: 'uniform', workload: { kind: 'uniform' } },
  { name: 'zipf s=1.0', workload: { kind: 'zipf', s: 1 } },
  { name: 'zipf s=1.5', workload: { kind: 'zipf', s: 1.5 } },
  { name: 'bursty (sessions of 5-30 in 5 min, zipf s=1.0)', workload: { kind: 'bursty', s: 1, sessionMin: 5, sessionMax: 30, sessionMinutes: 5 } },
];

const POLICIES: Array<{ name: string; schedule: Record<string, unknown>; useTrueRates?: boolean }> = [
  { name: 'round-robin', schedule: { policy: 'round-robin' } },
  // The optimum knows the true rates, uses α = 0.5, no burst term and no floor.
  { name: 'sqrt-optimum (true rates)', schedule: { alpha: 0.5, burstFollowUps: 0, maxIntervalMinutes: 1440 }, useTrueRates: true },
  { name: 'ours (adaptive, defaults)', schedule: {} },
];

function row(workload: string, policy: string, r: DayResult): BenchRow {
  return {
    case: workload,
    policy,
    requests: r.requests,
    'max in any hour': r.maxRollingHour,
    '429s': r.rateLimited,
    'mean delay min': round(r.meanMinutes),
    'p95 delay min': round(r.p95Minutes),
  };
}

const round = (x: number): number => Math.round(x * 10) / 10;

/** One row per policy, plus the analytic square-root optimum: (Σ√λ)² / (2·B·Σλ) with B = 900. */
export async function schedulingRows(name: string, workload: Workload): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  let rates: number[] = [];
  for (const policy of POLICIES) {
    const result = await simulateDay({ ...BASE, workload, schedule: policy.schedule, useTrueRates: policy.useTrueRates });
    rates = result.trueRates;
    rows.push(row(name, policy.name, result));
  }
  const formula = squareRootOptimumMeanHours(rates, BASE.bucketPerHour * 0.9) * 60;
  rows.splice(1, 0, { case: name, policy: 'sqrt-optimum (formula)', requests: '', 'max in any hour': 900, '429s': '', 'mean delay min': round(formula), 'p95 delay min': '' });
  return rows;
}

/** Another client spends 30% of the key's bucket, evenly: the daemon must adapt from the headers. */
export async function sharedKeyRows(): Promise<BenchRow[]> {
  const workload: Workload = { kind: 'zipf', s: 1 };
  const rows: BenchRow[] = [];
  for (const policy of [POLICIES[0], POLICIES[2]]) {
    if (!policy) continue;
    const result = await simulateDay({ ...BASE, workload, otherClientPerHour: 300, schedule: policy.schedule });
    rows.push(row('zipf s=1.0, key shared (other client 300/h)', policy.name, result));
  }
  return rows;
}
