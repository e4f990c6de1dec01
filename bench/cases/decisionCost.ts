import { nextAction, type LoopSnapshot } from '../../src/schedule/nextAction.js';
import { PollScheduler } from '../../src/schedule/pollScheduler.js';
import { scheduleConfigSchema } from '../../src/schedule/scheduleConfig.js';
import { Random } from '../../src/simulator/random.js';
import type { WatchedLog } from '../../src/store/storeRecords.js';
import type { BenchRow } from '../benchTable.js';

const HOUR_MS = 3_600_000;
/** 900 requests per hour: the loop decides about every 4 seconds. */
const SLOT_MS = 4_000;

/** A discovered, never-polled log created at `at`, its first poll due by `firstPollBy`. */
export const watched = (log: WatchedLog['log'], objectId: string, at: number, firstPollBy = at): WatchedLog => ({
  log,
  objectId,
  origin: 'discovered',
  status: 'active',
  statusReason: null,
  coverageStart: at,
  windowEnd: at,
  sortOrder: null,
  lastPollAt: null,
  lastSuccessAt: null,
  lastError: null,
  consecutiveFailures: 0,
  nextPollAt: at,
  entriesIngested: 0,
  createdAt: at,
  firstPollBy,
});

/**
 * CPU of the poll loop's decision alone: the scheduler's candidates (with the reallocation every
 * minute and the refit of the priors every ten, amortised over the decisions between them) and
 * `nextAction` over them, for `logs` watched logs at one decision per slot of a 900/h budget. A
 * tenth of the logs change, a few times an hour each, so the rates and the plan move as they do
 * in a day. What grows with the logs is one pass over them per decision: linear, not quadratic.
 */
export function decisionCost(logs: number, policy: 'adaptive' | 'round-robin', decisions = 3_000): BenchRow {
  const start = Date.UTC(2026, 10, 22);
  const config = scheduleConfigSchema.parse({ policy });
  const scheduler = new PollScheduler({ config, minIntervalMs: 60_000, budget: { intervalMs: () => SLOT_MS } });
  const list = Array.from({ length: logs }, (_, i) =>
    i === 0 ? watched('identity_provider', '', start) : watched(i % 6 === 0 ? 'skill' : 'career', `o${i}`, start),
  );
  const byKey = new Map(list.map((w) => [`${w.log}:${w.objectId}`, w]));
  scheduler.sync(list);
  const random = Random.derive(1, 'decision-cost');
  const busy = (w: WatchedLog): boolean => Number(w.objectId.slice(1)) % 10 === 0;
  const snapshot = (now: number): LoopSnapshot => ({
    pause: undefined,
    discovery: { dueAt: undefined, running: false },
    freeSlots: 4,
    budget: { sendAt: now, waitingDiscoveryOrHigher: 0, waiting: 0 },
    logs: scheduler.candidates(now),
    inFlight: new Set(),
    backoffUntil: new Map(),
  });
  let now = start;
  const lastPoll = new Map<string, number>();
  const cpu = process.cpuUsage();
  for (let i = 0; i < decisions; i++, now += SLOT_MS) {
    const action = nextAction(now, snapshot(now));
    if (!('launch' in action) || action.launch !== 'poll') continue;
    const w = byKey.get(action.key) as WatchedLog;
    const from = lastPoll.get(action.key) ?? now - HOUR_MS;
    lastPoll.set(action.key, now);
    const found = busy(w) && random.next() < Math.min(1, (now - from) / HOUR_MS) ? [now - 30_000] : [];
    scheduler.recordPoll(w, now, { requests: 1, emittedPerformedAt: found });
  }
  const used = process.cpuUsage(cpu);
  const micros = (used.user + used.system) / decisions;
  return {
    case: `${logs.toLocaleString('en-US')} logs`,
    policy,
    decisions,
    'CPU µs/decision': Math.round(micros),
    'CPU ns/decision/log': Math.round((1000 * micros) / logs),
  };
}
