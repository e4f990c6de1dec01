/**
 * The real daemon's freshness on the wall clock sped up, beside virtual time (issue 28's
 * "freshness tail as users live it"): for each seed, round-robin and ours on the same day, and
 * the goal ours must meet against round-robin (mean <= 0.57 x, p95 <= 1.00 x).
 *
 * `npx tsx bench/schedulingDaemonWallClock.ts [--time-scale 60|20|virtual] [--seeds 7,8,9]
 * [--hours 6] [--policies round-robin,adaptive] [--latency-ms 0] [--date-resolution-s 1]
 * [--schedule JSON] [--concurrent]`
 *
 * A scaled hour takes 3600 / scale real seconds, so `--time-scale 60 --hours 6` runs six minutes
 * per seed and policy, one after the other; `--concurrent` runs every seed and policy at once, each
 * in a process of its own (a run at 60x takes about a tenth of a core: six together fit in two
 * cores with room, and each still has an event loop to itself). The machine's load and each run's
 * event-loop delay are printed beside it: they are part of the figure.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { simulateDaemonDay, type DaemonDayResult } from './cases/schedulingDaemon.js';

export interface FreshnessWallClockOptions {
  /** Times faster than the wall clock, or 'virtual' for the quiet-clock driver's virtual time. */
  timeScale: number | 'virtual';
  seeds: readonly number[];
  /** Scaled hours per day, the two-hour warm-up and the unmeasured last hour included. */
  hours: number;
  policies?: readonly ('round-robin' | 'adaptive')[];
  /** The simulator's latency per answer, ms of scaled time. */
  latencyMs?: number;
  /** Resolution of the simulator's Date header, scaled seconds (60 at 60x: how a real header reads). */
  dateResolutionSeconds?: number;
  /** Settings under watch.schedule for every policy. */
  schedule?: Record<string, unknown>;
  /** Where each run's line goes as it finishes (default: stdout). */
  writeLine?: (line: string) => void;
  /** On the wall clock: every seed and policy at once, a process each (`--concurrent`). */
  concurrent?: boolean;
}

export interface FreshnessRun extends DaemonDayResult {
  seed: number;
  policy: string;
  /** The one-minute load average when the run started and when it ended. */
  loadAverage: [number, number];
  realSeconds: number;
}

/** The goal of issue 28 for ours against round-robin on the same day. */
export const FRESHNESS_GOAL = { meanRatio: 0.57, p95Ratio: 1.0 } as const;

export interface FreshnessVerdict {
  seed: number;
  meanRatio: number;
  /**
   * One standard error of `meanRatio` (first-order, from each run's error of its mean): how far
   * another draw of the same seed's changes, or a change that only moves the polls, may move it.
   */
  meanRatioError: number;
  p95Ratio: number;
  met: boolean;
  /**
   * The same ratios from the delays the two days' polls give a change at a random moment, at the
   * true rates (`expectedMeanMinutes`): without the arrivals' draw, so they follow the policy.
   */
  expectedMeanRatio: number;
  expectedP95Ratio: number;
}

/** First-order standard error of a / b from the errors of a and b, taken as independent. */
export function ratioError(a: number, aError: number, b: number, bError: number): number {
  if (a <= 0 || b <= 0) return 0;
  return (a / b) * Math.hypot(aError / a, bError / b);
}

export async function runFreshnessWallClock(options: FreshnessWallClockOptions): Promise<{
  runs: FreshnessRun[];
  verdicts: FreshnessVerdict[];
}> {
  const writeLine = options.writeLine ?? ((line: string) => console.log(line));
  const policies = options.policies ?? ['round-robin', 'adaptive'];
  if (options.concurrent && options.timeScale !== 'virtual') {
    const pairs = options.seeds.flatMap((seed) => policies.map((policy) => ({ seed, policy })));
    const children = new Set<ChildProcess>();
    // A run that fails ends the others, and so does a signal to this process: left running, each
    // would hold its share of a shared machine for the hours of its day, reported to nobody.
    const stopAll = (): void => {
      for (const child of children) child.kill('SIGTERM');
    };
    const onSignal = (signal: NodeJS.Signals): void => {
      stopAll();
      process.exitCode = 128 + (signal === 'SIGINT' ? 2 : 15);
    };
    process.once('SIGINT', onSignal).once('SIGTERM', onSignal);
    // The run that failed first: the others then end by the signal sent them.
    let first: { error: unknown } | undefined;
    try {
      // Settled, not Promise.all: the caller's exit must not come before every child has gone.
      const settled = await Promise.allSettled(
        pairs.map(({ seed, policy }) =>
          runInChild(options, seed, policy, writeLine, children).catch((error: unknown) => {
            first ??= { error };
            stopAll();
            throw error;
          }),
        ),
      );
      if (first) throw first.error;
      const runs = settled.map((result) => (result as PromiseFulfilledResult<FreshnessRun>).value);
      return { runs, verdicts: freshnessVerdicts(runs) };
    } finally {
      process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
    }
  }
  const runs: FreshnessRun[] = [];
  for (const seed of options.seeds) {
    for (const policy of policies) {
      const load = loadavg()[0] as number;
      const started = performance.now();
      const day = await simulateDaemonDay(
        {
          workload: { kind: 'zipf', s: 1 },
          seed,
          careers: 400,
          skills: 100,
          eventsPerHour: 300,
          bucketPerHour: 1000,
          otherClientPerHour: 0,
          hours: options.hours,
          warmupHours: 2,
          serviceHistoryHours: 168,
          schedule: { policy, ...options.schedule },
        },
        {
          latencyMs: options.latencyMs ?? 0,
          dateResolutionSeconds: options.dateResolutionSeconds ?? 1,
          ...(options.timeScale !== 'virtual' && { timeScale: options.timeScale }),
        },
      );
      const { trueRates: _rates, ...figures } = day;
      const run: FreshnessRun = {
        ...figures,
        trueRates: [],
        seed,
        policy,
        loadAverage: [load, loadavg()[0] as number],
        realSeconds: Math.round((performance.now() - started) / 1000),
      };
      runs.push(run);
      const { trueRates: _none, ...shown } = run;
      writeLine(JSON.stringify({ timeScale: options.timeScale, ...shown }));
    }
  }
  return { runs, verdicts: freshnessVerdicts(runs) };
}

/** The line a run prints as it ends, which `runInChild` reads back. */
const RUN_LINE = /^\{"timeScale":.*\}$/m;

/**
 * One seed and policy in a process of its own (this file, under the loader this process runs
 * with), its run read back from the line it prints; its other output and its errors pass through.
 */
async function runInChild(
  options: FreshnessWallClockOptions,
  seed: number,
  policy: 'round-robin' | 'adaptive',
  writeLine: (line: string) => void,
  children: Set<ChildProcess>,
): Promise<FreshnessRun> {
  const args = [
    ...process.execArgv,
    fileURLToPath(import.meta.url),
    ...['--time-scale', String(options.timeScale), '--seeds', String(seed), '--policies', policy],
    ...['--hours', String(options.hours), '--latency-ms', String(options.latencyMs ?? 0)],
    ...['--date-resolution-s', String(options.dateResolutionSeconds ?? 1)],
    ...['--schedule', JSON.stringify(options.schedule ?? {})],
  ];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  children.add(child);
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  }).finally(() => children.delete(child));
  const line = RUN_LINE.exec(output)?.[0];
  if (code !== 0 || line === undefined)
    throw new Error(`the freshness run of seed ${seed}, ${policy}, exited with ${code} and no result:\n${output}`);
  writeLine(line);
  const { timeScale: _scale, ...run } = JSON.parse(line) as Omit<FreshnessRun, 'trueRates'> & { timeScale: unknown };
  return { ...run, trueRates: [] };
}

/** Ours against round-robin, seed by seed, where both ran. */
export function freshnessVerdicts(runs: readonly FreshnessRun[]): FreshnessVerdict[] {
  const verdicts: FreshnessVerdict[] = [];
  for (const ours of runs.filter((r) => r.policy === 'adaptive')) {
    const rr = runs.find((r) => r.policy === 'round-robin' && r.seed === ours.seed);
    if (!rr) continue;
    const meanRatio = ours.meanMinutes / rr.meanMinutes;
    const p95Ratio = ours.p95Minutes / rr.p95Minutes;
    verdicts.push({
      seed: ours.seed,
      meanRatio,
      meanRatioError: ratioError(ours.meanMinutes, ours.meanErrorMinutes, rr.meanMinutes, rr.meanErrorMinutes),
      p95Ratio,
      met: meanRatio <= FRESHNESS_GOAL.meanRatio && p95Ratio <= FRESHNESS_GOAL.p95Ratio,
      expectedMeanRatio: ours.expectedMeanMinutes / rr.expectedMeanMinutes,
      expectedP95Ratio: ours.expectedP95Minutes / rr.expectedP95Minutes,
    });
  }
  return verdicts;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      'time-scale': { type: 'string', default: '60' },
      seeds: { type: 'string', default: '7,8,9' },
      hours: { type: 'string', default: '6' },
      policies: { type: 'string', default: 'round-robin,adaptive' },
      'latency-ms': { type: 'string', default: '0' },
      'date-resolution-s': { type: 'string', default: '1' },
      schedule: { type: 'string', default: '{}' },
      concurrent: { type: 'boolean', default: false },
    },
  });
  const scale = values['time-scale'];
  const { verdicts } = await runFreshnessWallClock({
    timeScale: scale === 'virtual' ? 'virtual' : Number(scale),
    seeds: values.seeds.split(',').map(Number),
    hours: Number(values.hours),
    policies: values.policies.split(',') as ('round-robin' | 'adaptive')[],
    latencyMs: Number(values['latency-ms']),
    dateResolutionSeconds: Number(values['date-resolution-s']),
    schedule: JSON.parse(values.schedule) as Record<string, unknown>,
    concurrent: values.concurrent,
  });
  for (const v of verdicts)
    console.log(
      `${v.met ? 'met  ' : 'short'}  seed ${v.seed} at ${scale}: mean ${v.meanRatio.toFixed(3)} ` +
        `(± ${v.meanRatioError.toFixed(3)}, one standard error of the draw) x round-robin ` +
        `(goal <= ${FRESHNESS_GOAL.meanRatio}), p95 ${v.p95Ratio.toFixed(3)} x (goal <= ${FRESHNESS_GOAL.p95Ratio.toFixed(2)}); ` +
        `expected from the polls: mean ${v.expectedMeanRatio.toFixed(3)} x, p95 ${v.expectedP95Ratio.toFixed(3)} x`,
    );
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
