import { closeSync, existsSync, mkdtempSync, openSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChangefeedDaemon } from '../../src/daemon/changefeedDaemon.js';
import type { ChangefeedStore } from '../../src/store/changefeedStore.js';
import { storePath } from '../../src/store/sqlite/database.js';
import { ManualClock } from '../../test/support/manualClock.js';
import { appConfigSchema } from '../../src/config/appConfigSchema.js';
import { noopLogger } from '../../test/support/noopLogger.js';
import { startSimulator } from '../../src/simulator/index.js';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { systemClock } from '../../src/clock.js';
import { QuietClockDriver } from './quietClock.js';
import { ScaledClock } from './scaledClock.js';
import type { DayOptions, DayResult } from './schedulingDay.js';
import { openSqliteStoreFile } from '../../test/support/sqliteStoreFile.js';
import { expectedDelayGivenPolls } from './expectedDelayGivenPolls.js';

const HOUR_MS = 3_600_000;
const SINK = 'file';
/** How often, in real ms, the wall-clock mode looks for new lines in the sink's file. */
const WALL_TAIL_MS = 5;

/** How the day's time runs, and what the service adds to each answer. */
export interface DaemonDayTime {
  /** The simulator's latency per answer, ms of the day's time. */
  latencyMs?: number;
  /** Resolution of the simulator's Date header, seconds of the day's time (default 1). */
  dateResolutionSeconds?: number;
  /**
   * Undefined: virtual time (QuietClockDriver), where nothing real costs time. A number: the wall
   * clock sped up that many times (ScaledClock), where every real millisecond of latency, CPU and
   * event-loop queueing costs `timeScale` ms of the day, as users live it on a loaded machine.
   */
  timeScale?: number;
}

export interface DaemonDayResult extends DayResult {
  /** Wall-clock mode: the 99th percentile of the event loop's delay, real ms (a measure of load). */
  eventLoopDelayP99Ms?: number;
  /** Changes measured (performed between the warm-up and the last hour). */
  measured: number;
  /**
   * Standard error of the mean delay, minutes: the measured changes are one sample of the day's
   * workload, and a change that moves the polls' phases draws another (docs/scheduling.md).
   */
  meanErrorMinutes: number;
  /**
   * The mean and p95 the day's polls give a change at a random moment of the measured hours, at
   * each log's true rate (expectedDelayGivenPolls.ts): the same day without the arrivals' draw.
   */
  expectedMeanMinutes: number;
  expectedP95Minutes: number;
}

/** Standard error of the mean of `values`: the sample's standard deviation over √n. */
export function standardErrorOfMean(values: readonly number[]): number {
  const n = values.length;
  if (n < 2) return 0;
  const mean = values.reduce((a, b) => a + b, 0) / n;
  const variance = values.reduce((sum, v) => sum + (v - mean) ** 2, 0) / (n - 1);
  return Math.sqrt(variance / n);
}

/**
 * One simulated day of the real daemon, as `changefeed run` wires it (service client over
 * loopback HTTP, poll loop, scheduler, read budget, SQLite store, delivery engine, file sink),
 * against the built-in simulator. In virtual time (the default) both run on one ManualClock that
 * a QuietClockDriver moves only while nothing is in flight, so a day of the real thing takes
 * about 100 s of CPU and its figures do not depend on the machine's load. With `timeScale` both run
 * on the wall clock sped up (ScaledClock): a day takes 24 / timeScale real hours and its figures
 * include what latency and load cost, scaled up.
 *
 * Detection delay = when the event is in the file sink (virtual time) − its `time`
 * (the entry's performedAt on the simulator), for changes performed from the end of the
 * warm-up until an hour before the end, as in the model bench.
 */
export async function simulateDaemonDay(o: DayOptions, time: DaemonDayTime = {}): Promise<DaemonDayResult> {
  if (o.otherClientPerHour > 0 || o.useTrueRates)
    throw new Error('the real daemon runs alone on its key, learning rates');
  const start = Date.UTC(2026, 10, 22, 0, 0, 0);
  const wall = time.timeScale === undefined ? undefined : new ScaledClock(start, time.timeScale);
  const clock = wall ?? new ManualClock(start);
  const driver = clock instanceof ManualClock ? new QuietClockDriver(clock) : undefined;
  const simulator = await startSimulator({
    clock: driver?.serviceClock() ?? clock,
    faults: { latencyMs: time.latencyMs ?? 0, dateResolutionSeconds: time.dateResolutionSeconds ?? 1 },
    seed: o.seed,
    careers: o.careers,
    skills: o.skills,
    eventsPerHour: o.eventsPerHour,
    workload: o.workload,
    historyHours: o.serviceHistoryHours,
    readsPerHour: o.bucketPerHour,
  });
  // In memory where there is a tmpfs: the file sink's fsync takes no virtual time anyway, only real time.
  const dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'changefeed-sched-daemon-'));
  const eventsPath = join(dir, 'events.jsonl');
  const config = appConfigSchema.parse({
    api: { baseUrl: simulator.url, apiKey: simulator.apiKey },
    watch: { careers: { discover: true }, skills: { discover: true }, schedule: o.schedule },
    budget: { readsPerHour: o.bucketPerHour },
    sinks: [{ name: SINK, type: 'file', path: eventsPath }],
    stateDir: join(dir, 'state'),
  });
  const daemon = new ChangefeedDaemon(config, { logger: noopLogger, clock });
  const measureFrom = start + o.warmupHours * HOUR_MS;
  const measureUntil = start + (o.hours - 1) * HOUR_MS;
  const delays: number[] = [];
  let events = 0;
  const tail = new FileTail(eventsPath);
  let failed: unknown;
  const stamp = (now: number): void => {
    if (failed !== undefined)
      throw failed instanceof Error ? failed : new Error('the daemon did not start', { cause: failed });
    for (const line of tail.newLines()) {
      events++;
      const time = (JSON.parse(line) as { time?: string }).time;
      const at = time === undefined ? Number.NaN : Date.parse(time);
      if (at >= measureFrom && at < measureUntil) delays.push(now - at);
    }
  };
  // A second, read-only connection to the daemon's store: in WAL mode it sees every commit.
  let reader: ChangefeedStore | undefined;
  const pending = async (): Promise<boolean> => {
    reader ??= openSqliteStoreFile(storePath(join(dir, 'state')), { readonly: true });
    return (await reader.outbox.pending(SINK, 0, 1)).length > 0;
  };
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  try {
    const started = daemon.start().catch((error: unknown) => {
      failed = error;
    });
    const until = start + o.hours * HOUR_MS;
    if (driver) await driver.runUntil(until, pending, stamp);
    else {
      loopDelay.enable();
      // What is in the file now was delivered by now: look often, so a look's lag is well under a scaled second.
      while (clock.now() < until) {
        await systemClock.sleep(WALL_TAIL_MS);
        stamp(clock.now());
      }
      loopDelay.disable();
    }
    await started;
  } finally {
    driver?.close();
    await reader?.close();
    await daemon.stop();
    await simulator.close();
    tail.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const trueRates = simulator.trueRates();
  const expected = expectedDelayGivenPolls(
    pollTimesByLog(simulator.requests, trueRates),
    measureFrom,
    measureUntil,
    start + o.hours * HOUR_MS,
  );
  const sentAt = simulator.requests.filter((r) => r.path !== '/api/v1/ping').map((r) => r.at);
  delays.sort((a, b) => a - b);
  const mean = delays.reduce((a, b) => a + b, 0) / Math.max(1, delays.length);
  return {
    requests: simulator.requests.length,
    maxRollingHour: maxInWindow(sentAt, HOUR_MS),
    rateLimited: simulator.requests.filter((r) => r.status === 429).length,
    meanMinutes: mean / 60_000,
    p95Minutes: (delays[Math.floor(0.95 * (delays.length - 1))] ?? 0) / 60_000,
    measured: delays.length,
    meanErrorMinutes: standardErrorOfMean(delays) / 60_000,
    expectedMeanMinutes: expected.meanMinutes,
    expectedP95Minutes: expected.p95Minutes,
    events,
    trueRates: [...trueRates.values()],
    ...(wall && { eventLoopDelayP99Ms: loopDelay.percentile(99) / 1e6 }),
  };
}

/**
 * Each log's true rate and the times its polls read it: the first page of each poll (an answered
 * request without an offset past 0) on the log's activity path, keyed as the simulator keys its
 * rates. A change a second page reads counts as read a slot early.
 */
export function pollTimesByLog(
  requests: ReadonlyArray<{ at: number; path: string; query: Readonly<Record<string, string>>; status: number }>,
  trueRates: ReadonlyMap<string, number>,
): Array<{ rate: number; pollTimes: number[] }> {
  const times = new Map<string, number[]>();
  for (const r of requests) {
    if (r.status >= 300 || (r.query.offset ?? '0') !== '0') continue;
    const key = activityKey(r.path);
    if (key === undefined) continue;
    const list = times.get(key) ?? [];
    list.push(r.at);
    times.set(key, list);
  }
  return [...trueRates].map(([key, rate]) => ({ rate, pollTimes: times.get(key) ?? [] }));
}

/** The simulator's stream key (`career:id`, `skill:id`, `identity_provider:null`) of an activity path. */
function activityKey(path: string): string | undefined {
  if (path === '/api/v1/identity-provider-events') return 'identity_provider:null';
  const match = /^\/api\/v1\/(careers|skills)\/([^/]+)\/activity$/.exec(path);
  if (!match) return undefined;
  return `${match[1] === 'careers' ? 'career' : 'skill'}:${decodeURIComponent(match[2] as string)}`;
}

/** New complete lines of a file that only grows (the file sink appends and fsyncs whole batches). */
class FileTail {
  private fd: number | undefined;
  private offset = 0;
  private rest = '';
  private readonly buffer = Buffer.alloc(1 << 20);

  constructor(private readonly path: string) {}

  newLines(): string[] {
    if (this.fd === undefined) {
      try {
        this.fd = openSync(this.path, 'r');
      } catch {
        return [];
      }
    }
    let text = this.rest;
    for (;;) {
      const n = readSync(this.fd, this.buffer, 0, this.buffer.length, this.offset);
      if (n === 0) break;
      this.offset += n;
      text += this.buffer.toString('utf8', 0, n);
    }
    const lines = text.split('\n');
    this.rest = lines.pop() ?? '';
    return lines.filter((l) => l.length > 0);
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
  }
}

/** Most timestamps in any window of `windowMs` (sorted input). */
function maxInWindow(times: readonly number[], windowMs: number): number {
  let best = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while ((times[j] as number) <= (times[i] as number) - windowMs) j++;
    best = Math.max(best, i - j + 1);
  }
  return best;
}
