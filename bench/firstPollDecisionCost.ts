/**
 * CPU per decision of the poll loop while a tenant's logs are new: `tenants` schedulers of 26
 * never-polled logs each (created together, first polls due in 60 s), a 900/h budget whose pace
 * moves a few tenths of a percent with each request, as a server's window makes it, and
 * `decisionsPerPoll` decisions (candidates and `nextAction`) per poll. Runs until every log was
 * polled once and a little beyond; prints CPU µs per decision (process.cpuUsage), how often the
 * first-poll starts were reckoned per decision, and the load.
 *
 *   npx tsx bench/firstPollDecisionCost.ts [tenants=200] [decisionsPerPoll=3] [rounds=5]
 */
import { loadavg } from 'node:os';
import { nextAction } from '../src/schedule/nextAction.js';
import { PollScheduler } from '../src/schedule/pollScheduler.js';
import { scheduleConfigSchema } from '../src/schedule/scheduleConfig.js';
import { watched } from './cases/decisionCost.js';

const SLOT_MS = 4_000;
const LOGS = 26;
const POLLS = 40;

const [tenants = 200, decisionsPerPoll = 3, rounds = 5] = process.argv.slice(2).map(Number);

function round(): { micros: number; decisions: number } {
  const start = Date.UTC(2026, 10, 27);
  const config = scheduleConfigSchema.parse({});
  const fleet = Array.from({ length: tenants }, (_, t) => {
    let sent = 0;
    const logs = Array.from({ length: LOGS }, (_, i) => watched('career', `t${t}o${i}`, start, start + 60_000));
    const scheduler = new PollScheduler({
      config,
      minIntervalMs: 60_000,
      // A window's pace: (reset - now) / usable, moving by a few tenths of a percent per request.
      budget: { intervalMs: () => SLOT_MS * (1 + 0.003 * Math.sin(sent * 1.7)) },
    });
    scheduler.sync(logs);
    return { scheduler, byKey: new Map(logs.map((w) => [`career:${w.objectId}`, w])), send: () => sent++ };
  });
  let decisions = 0;
  const cpu = process.cpuUsage();
  for (let p = 0; p < POLLS; p++) {
    const now = start + p * SLOT_MS;
    for (const { scheduler, byKey, send } of fleet) {
      let key: string | undefined;
      for (let d = 0; d < decisionsPerPoll; d++) {
        const action = nextAction(now + d, {
          pause: undefined,
          discovery: { dueAt: undefined, running: false },
          freeSlots: 1,
          budget: { sendAt: now + d, waitingDiscoveryOrHigher: 0, waiting: 0 },
          logs: scheduler.candidates(now + d),
          inFlight: new Set(),
          backoffUntil: new Map(),
        });
        decisions++;
        send();
        if ('launch' in action && action.launch === 'poll') key = action.key;
      }
      if (key !== undefined)
        scheduler.recordPoll(byKey.get(key)!, now + decisionsPerPoll, { requests: 1, emittedPerformedAt: [] });
    }
  }
  const used = process.cpuUsage(cpu);
  return { micros: (used.user + used.system) / decisions, decisions };
}

// Counted apart from the clock: how many times the first-poll starts were reckoned (a list built with them).
let reckoned = 0;
const proto = PollScheduler.prototype as unknown as { firstPollStarts: (...args: unknown[]) => unknown };
const firstPollStarts = proto.firstPollStarts;
proto.firstPollStarts = function (this: unknown, ...args: unknown[]) {
  reckoned++;
  return firstPollStarts.apply(this, args);
};

const results = Array.from({ length: rounds }, round);
const micros = results.map((r) => r.micros).sort((a, b) => a - b);
console.log(
  JSON.stringify({
    tenants,
    decisionsPerPoll,
    decisionsPerRound: results[0]!.decisions,
    reckonedPerDecision: Number((reckoned / results.reduce((sum, r) => sum + r.decisions, 0)).toFixed(3)),
    cpuMicrosPerDecision: micros.map((m) => Number(m.toFixed(2))),
    median: Number(micros[Math.floor(micros.length / 2)]!.toFixed(2)),
    loadAverage: loadavg().map((l) => Number(l.toFixed(2))),
  }),
);
