import { squareRootOptimumMeanHours } from '../../src/schedule/pollAllocation.js';
import type { Workload } from '../../src/simulator/simulatorOptions.js';
import type { BenchRow } from '../benchTable.js';
import { simulateDaemonDay } from './schedulingDaemon.js';
import { simulateDay, type DayOptions, type DayResult } from './schedulingDay.js';
import type { DayKind } from './schedulingDayPool.js';

/**
 * Every row is the average of one simulated day per seed: one day's p95 moves by a few tenths of
 * a minute with the seed, as much as some of the differences the targets are about.
 */
export const SEEDS = [7, 8, 9];

/**
 * The setting: 500 careers and skills plus the identity-provider log, 900 requests/hour,
 * 300 events/hour. The daemon starts cold (an empty store) against a service whose logs hold the
 * week before, as a service in use does.
 */
const BASE: Omit<DayOptions, 'workload' | 'schedule' | 'seed'> = {
  careers: 400,
  skills: 100,
  eventsPerHour: 300,
  bucketPerHour: 1000,
  otherClientPerHour: 0,
  hours: 24,
  warmupHours: 2,
  serviceHistoryHours: 168,
};
const ALLOWANCE = BASE.bucketPerHour * 0.9;

export const SCHEDULING_WORKLOADS: Array<{ name: string; workload: Workload }> = [
  { name: 'uniform', workload: { kind: 'uniform' } },
  { name: 'zipf s=1.0', workload: { kind: 'zipf', s: 1 } },
  { name: 'zipf s=1.5', workload: { kind: 'zipf', s: 1.5 } },
  {
    name: 'bursty (sessions of 5-30 in 5 min, zipf s=1.0)',
    workload: { kind: 'bursty', s: 1, sessionMin: 5, sessionMax: 30, sessionMinutes: 5 },
  },
];

export const POLICY = {
  roundRobin: 'round-robin',
  formula: 'sqrt-optimum (formula)',
  trueRates: 'sqrt-optimum (true rates)',
  ours: 'ours (adaptive, defaults)',
  oursNoHistory: 'ours, historyHours: 0',
} as const;

const POLICIES: Array<{ name: string; schedule: Record<string, unknown>; useTrueRates?: boolean }> = [
  { name: POLICY.roundRobin, schedule: { policy: 'round-robin' } },
  // The optimum knows the true rates, uses α = 0.5, no follow-ups and no floor.
  { name: POLICY.trueRates, schedule: { alpha: 0.5, followUpPolls: 0, maxIntervalMinutes: 1440 }, useTrueRates: true },
  { name: POLICY.ours, schedule: {} },
  // What reading the logs' history on the first poll buys: the same without it.
  { name: POLICY.oursNoHistory, schedule: { historyHours: 0 } },
];

const policies = (...names: string[]): typeof POLICIES => POLICIES.filter((p) => names.includes(p.name));

/**
 * The model's policies for a workload: only what a target judges (round-robin and ours; the
 * optimum run with the true rates where bursty is held to beat it), so the section stays under
 * 15 minutes. The other variants of docs/scheduling.md are one `simulateDay` each.
 */
const modelPolicies = (workload: string): typeof POLICIES =>
  workload.startsWith('bursty')
    ? policies(POLICY.roundRobin, POLICY.trueRates, POLICY.ours)
    : policies(POLICY.roundRobin, POLICY.ours);

/** Runs one simulated day, of the model or of the real daemon; `label` names it in progress lines. */
export type DayRunner = (kind: DayKind, options: DayOptions, label: string) => Promise<DayResult>;

/** Each day in this process, one after another. */
export const runDayInProcess: DayRunner = (kind, options) =>
  kind === 'daemon' ? simulateDaemonDay(options) : simulateDay(options);

/**
 * The seeds' days of one policy, summarised as one row (of the model, or of the real daemon).
 * All seeds are asked for at once: a pool runs them side by side.
 */
async function averagedRow(
  name: string,
  policy: string,
  options: Omit<DayOptions, 'seed'>,
  runDay: DayRunner,
  kind: DayKind = 'model',
): Promise<{ row: BenchRow; rates: number[] }> {
  const days = await Promise.all(
    SEEDS.map((seed) => runDay(kind, { ...options, seed }, `${kind}, ${name}, ${policy}, seed ${seed}`)),
  );
  const average = (pick: (d: DayResult) => number): number => days.reduce((sum, d) => sum + pick(d), 0) / days.length;
  return {
    row: {
      case: name,
      policy,
      'requests/day': Math.round(average((d) => d.requests)),
      'max in any hour': Math.max(...days.map((d) => d.maxRollingHour)),
      '429s': days.reduce((sum, d) => sum + d.rateLimited, 0),
      'mean delay min': minutes(average((d) => d.meanMinutes)),
      'p95 delay min': minutes(average((d) => d.p95Minutes)),
    },
    rates: days[0]?.trueRates ?? [],
  };
}

/** Two decimals, as text: some targets are decided by a few hundredths of a minute. */
const minutes = (x: number): string => x.toFixed(2);

/** One row per policy, plus the analytic square-root optimum: (Σ√λ)² / (2·B·Σλ) with B = 900. */
export async function schedulingRows(name: string, workload: Workload, runDay: DayRunner): Promise<BenchRow[]> {
  const results = await Promise.all(
    modelPolicies(name).map((policy) =>
      averagedRow(
        name,
        policy.name,
        { ...BASE, workload, schedule: policy.schedule, useTrueRates: policy.useTrueRates },
        runDay,
      ),
    ),
  );
  const rows = results.map((r) => r.row);
  const rates = results.at(-1)?.rates ?? [];
  // The seeds shuffle which object gets which rate, not the rates: one formula value serves all.
  const formula = squareRootOptimumMeanHours(rates, ALLOWANCE) * 60;
  rows.splice(1, 0, {
    case: name,
    policy: POLICY.formula,
    'requests/day': '',
    'max in any hour': ALLOWANCE,
    '429s': '',
    'mean delay min': minutes(formula),
    'p95 delay min': '',
  });
  return rows;
}

/** Another client spends 30% of the key's bucket, evenly: the daemon must adapt from the headers. */
export async function sharedKeyRows(runDay: DayRunner): Promise<BenchRow[]> {
  const workload: Workload = { kind: 'zipf', s: 1 };
  const results = await Promise.all(
    policies(POLICY.roundRobin, POLICY.ours).map((policy) =>
      averagedRow(
        'zipf s=1.0, key shared (other client 300/h)',
        policy.name,
        { ...BASE, workload, otherClientPerHour: 300, schedule: policy.schedule },
        runDay,
      ),
    ),
  );
  return results.map((r) => r.row);
}

/** The workload of the measurement from outside, which the real daemon's rows repeat. */
export const DAEMON_WORKLOAD = 'zipf s=1.0';

/**
 * The same day, seeds and policies as the model's rows, run by the real daemon (service client
 * over loopback HTTP, store, delivery engine, file sink) against the simulator in virtual time.
 */
export async function daemonRows(runDay: DayRunner): Promise<BenchRow[]> {
  const workload = SCHEDULING_WORKLOADS.find((w) => w.name === DAEMON_WORKLOAD)?.workload;
  if (!workload) return [];
  // Round-robin, ours, and ours without history (the setting of the measurement).
  const results = await Promise.all(
    policies(POLICY.roundRobin, POLICY.ours, POLICY.oursNoHistory).map((policy) =>
      averagedRow(DAEMON_WORKLOAD, policy.name, { ...BASE, workload, schedule: policy.schedule }, runDay, 'daemon'),
    ),
  );
  return results.map((r) => r.row);
}
