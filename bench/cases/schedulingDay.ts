import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiProblemError } from '../../src/api/apiErrors.js';
import type { RequestPriority } from '../../src/api/serviceClient.js';
import { ManualClock } from '../../test/support/manualClock.js';
import type { LogKind } from '../../src/logs.js';
import { noopLogger } from '../../test/support/noopLogger.js';
import { historyLookbackMs } from '../../src/poll/logHistory.js';
import type { PollResult } from '../../src/poll/logPoller.js';
import { PollLoop } from '../../src/poll/pollLoop.js';
import { ReadBudget } from '../../src/poll/readBudget.js';
import { watchConfigSchema } from '../../src/poll/watchConfig.js';
import { Random } from '../../src/simulator/random.js';
import { ReadBuckets } from '../../src/simulator/readBucket.js';
import type { Workload } from '../../src/simulator/simulatorOptions.js';
import { WorkloadModel } from '../../src/simulator/workload.js';
import { storePath } from '../../src/store/sqlite/database.js';
import type { WatchedLog } from '../../src/store/storeRecords.js';
import { openSqliteStoreFile } from '../../test/support/sqliteStoreFile.js';

const HOUR_MS = 3_600_000;
const KEY = 'bench-key';

export interface DayOptions {
  workload: Workload;
  seed: number;
  careers: number;
  skills: number;
  eventsPerHour: number;
  /** The key's bucket (the daemon keeps 10% of it in reserve). */
  bucketPerHour: number;
  /** Requests per hour another client of the same key spends, evenly. */
  otherClientPerHour: number;
  hours: number;
  warmupHours: number;
  /** Settings under watch.schedule. */
  schedule: Record<string, unknown>;
  /** Plan with the true rates (the square-root optimum row). */
  useTrueRates?: boolean;
  /** Hours of changes the logs already hold when the daemon starts (0: the service starts with the daemon). */
  serviceHistoryHours: number;
  /** Hours at the end whose changes are not measured (default 1): they may still be waiting for their poll. */
  tailHours?: number;
  /**
   * Count measured changes still unread at the end, at their delay so far (a lower bound). With a
   * tail longer than the p95 delay, the p95 is then exact and the mean slightly low.
   */
  countUndetected?: boolean;
  /** Where the store goes and stays after the day (default: a temporary directory, removed). */
  stateDir?: string;
}

export interface DayResult {
  requests: number;
  maxRollingHour: number;
  rateLimited: number;
  meanMinutes: number;
  p95Minutes: number;
  events: number;
  /** True long-run rates per scheduled log, events per hour. */
  trueRates: number[];
  /** Measured changes no poll had read by the end (counted only with `countUndetected`). */
  undetected?: number;
}

/** Every change of the day, per log key (`career:id`, `identity_provider:`), oldest first. */
function generateArrivals(o: DayOptions, start: number, careerIds: string[], skillIds: string[]) {
  const model = new WorkloadModel(
    { workload: o.workload, eventsPerHour: o.eventsPerHour, identityProviderShare: 0.1, skillShare: 0.2 },
    { career: careerIds, skill: skillIds },
    (label) => Random.derive(o.seed, label),
  );
  const byKey = new Map<string, number[]>();
  const rates = new Map<string, number>();
  for (const [k, rate] of model.trueRates()) rates.set(k.replace(/:null$/, ':'), rate);
  const historyFrom = start - o.serviceHistoryHours * HOUR_MS;
  for (const log of ['career', 'skill', 'identity_provider'] as const) {
    const history = model.arrivals(log, historyFrom, start, Random.derive(o.seed, 'history', log));
    for (const a of [
      ...history,
      ...model.arrivals(log, start, start + o.hours * HOUR_MS, Random.derive(o.seed, 'arrivals', log)),
    ]) {
      const key = `${log}:${a.objectId ?? ''}`;
      const list = byKey.get(key) ?? [];
      list.push(a.at);
      byKey.set(key, list);
    }
  }
  for (const list of byKey.values()) list.sort((a, b) => a - b);
  return { byKey, rates };
}

/**
 * One simulated day of the real poll loop, scheduler and read budget on a ManualClock. The
 * service is in process: the key's bucket is the simulator's own fixed-window ReadBuckets, and a
 * poll returns the workload's changes since the previous poll of that log. No sockets and no
 * HTTP client, so a day takes seconds; what is measured is the choice of poll times.
 */
export async function simulateDay(o: DayOptions): Promise<DayResult> {
  const start = Date.UTC(2026, 10, 22, 0, 0, 0);
  const clock = new ManualClock(start);
  const careerIds = Array.from({ length: o.careers }, (_, i) => `car_${i}`);
  const skillIds = Array.from({ length: o.skills }, (_, i) => `sk_${i}`);
  const { byKey, rates } = generateArrivals(o, start, careerIds, skillIds);
  const dir = o.stateDir ?? mkdtempSync(join(tmpdir(), 'changefeed-sched-'));
  const store = openSqliteStoreFile(storePath(dir));
  const register = async (log: LogKind, objectId: string): Promise<void> =>
    void (await store.watchedLogs.registerAll([
      { log, objectId, origin: 'discovered', coverageStart: start, now: start },
    ]));
  await register('identity_provider', '');
  for (const id of careerIds) await register('career', id);
  for (const id of skillIds) await register('skill', id);

  const budget = new ReadBudget(
    { readsPerHour: o.bucketPerHour, reserve: 0.1, retryAfterFallbackSeconds: 60, maxServerPauseSeconds: 3600 },
    clock,
  );
  const bucket = new ReadBuckets(o.bucketPerHour);
  const sentAt: number[] = [];
  let rateLimited = 0;
  const request = async (priority: RequestPriority, signal?: AbortSignal): Promise<void> => {
    await budget.acquire(priority, signal);
    const now = clock.now();
    const d = bucket.take(KEY, now);
    sentAt.push(now);
    const retryAfterSeconds = d.allowed ? undefined : d.resetSeconds;
    budget.observe({
      status: d.allowed ? 200 : 429,
      requestId: undefined,
      limit: d.limit,
      remaining: d.remaining,
      resetSeconds: d.resetSeconds,
      retryAfterSeconds,
      serverDate: now,
      receivedAt: now,
    });
    if (!d.allowed) {
      rateLimited++;
      throw new ApiProblemError({
        code: 'API_RATE_LIMITED',
        message: 'rate limited (429)',
        path: '/bench',
        status: 429,
        problem: { status: 429 } as never,
        retryAfterSeconds,
      });
    }
  };

  const watch = watchConfigSchema.parse({
    careers: { discover: true },
    skills: { discover: true },
    schedule: o.schedule,
  });
  const historyMs = historyLookbackMs(watch.schedule);
  const measureFrom = start + o.warmupHours * HOUR_MS;
  // Changes of the last hour may still be waiting for their poll when the day ends: leave them out.
  const measureUntil = start + (o.hours - (o.tailHours ?? 1)) * HOUR_MS;
  const delays: number[] = [];
  const cursor = new Map<string, number>();
  const poller = {
    poll: async (w: WatchedLog, signal?: AbortSignal): Promise<PollResult> => {
      await request(w.log === 'identity_provider' ? 'identity_provider' : 'poll', signal);
      const key = `${w.log}:${w.objectId}`;
      const now = clock.now();
      const from = cursor.get(key) ?? start;
      const first = !cursor.has(key);
      cursor.set(key, now);
      const list = byKey.get(key) ?? [];
      // A first poll reads the log's history as LogPoller does: one page of 200 (newest first
      // here) over the lookback, which is also the first window unless the page is full.
      let history: PollResult['history'];
      let requests = 1;
      if (first && historyMs > 0) {
        const held = list.slice(lowerBound(list, now - historyMs), lowerBound(list, now));
        const full = held.length >= 200 && w.log !== 'skill';
        const page = full ? held.slice(-200) : held;
        if (full) {
          await request('poll', signal);
          requests++;
        }
        history = full
          ? { fromMs: page[0] as number, toMs: page.at(-1) as number, performedAt: page.slice(1) }
          : { fromMs: now - historyMs, toMs: now, performedAt: page };
      }
      const found: number[] = [];
      for (let i = lowerBound(list, from); i < list.length && (list[i] as number) < now; i++)
        found.push(list[i] as number);
      for (const at of found) if (at >= measureFrom && at < measureUntil) delays.push(now - at);
      return { emitted: found.length, duplicates: 0, requests, emittedPerformedAt: found, history };
    },
  };
  const registry = {
    discoveryEnabled: true,
    discoveredLists: 'career,skill',
    // Nothing recorded: discovery runs first, as a cold start's does.
    lastDiscovery: () => Promise.resolve(undefined),
    // Two lists of pageSize 200: the pages a real discovery run reads; every log is registered already.
    discover: async (signal?: AbortSignal) => {
      const pages = Math.floor(o.careers / 200) + 1 + Math.floor(o.skills / 200) + 1;
      for (let i = 0; i < pages; i++) await request('discovery', signal);
      return { added: 0 };
    },
  };
  const loop = new PollLoop({
    poller,
    registry,
    store,
    clock,
    watch,
    logger: noopLogger,
    budget,
    knownRates: o.useTrueRates ? (key) => rates.get(key) : undefined,
  });
  const end = start + o.hours * HOUR_MS;
  const other = (async () => {
    if (o.otherClientPerHour <= 0) return;
    for (;;) {
      await clock.sleep(HOUR_MS / o.otherClientPerHour, loop.signal);
      bucket.spend(KEY, 1, clock.now());
    }
  })().catch(() => undefined);
  loop.start();
  while (clock.now() < end) {
    for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => setImmediate(resolve));
    const next = clock.nextWakeAt();
    await clock.advanceTo(next === undefined ? end : Math.min(next, end));
  }
  await loop.stop();
  await other;
  await store.close();
  if (o.stateDir === undefined) rmSync(dir, { recursive: true, force: true });
  let undetected = 0;
  for (const [key, list] of o.countUndetected ? byKey : []) {
    const from = lowerBound(list, Math.max(cursor.get(key) ?? start, measureFrom));
    for (let i = from; i < lowerBound(list, measureUntil); i++, undetected++) delays.push(end - (list[i] as number));
  }
  delays.sort((a, b) => a - b);
  const mean = delays.reduce((a, b) => a + b, 0) / Math.max(1, delays.length);
  return {
    requests: sentAt.length,
    maxRollingHour: maxInWindow(sentAt, HOUR_MS),
    rateLimited,
    meanMinutes: mean / 60_000,
    p95Minutes: (delays[Math.floor(0.95 * (delays.length - 1))] ?? 0) / 60_000,
    events: delays.length,
    trueRates: [...rates.values()],
    ...(o.countUndetected ? { undetected } : {}),
  };
}

function lowerBound(sorted: readonly number[], value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((sorted[mid] as number) < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
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
