import { describe, expect, it } from 'vitest';
import {
  IDLE_WAKE_MS,
  KEY_FILE_CHECK_MS,
  MIN_WAKE_MS,
  nextAction,
  urgencyOf,
  type KeyPause,
  type LogCandidate,
  type LoopSnapshot,
  type NextAction,
} from '../../src/schedule/nextAction.js';

const NOW = 1_000_000_000;
const MIN = 60_000;

/** A log polled `ago` ms before NOW with a target interval of `interval` ms. */
function log(key: string, ago: number, interval = 10 * MIN, extra: Partial<LogCandidate> = {}): LogCandidate {
  return {
    key,
    earliestAt: NOW - ago + MIN,
    anchorAt: NOW - ago,
    intervalMs: interval,
    starvingMs: 54 * MIN,
    followUpDueAt: null,
    firstPollAt: null,
    ...extra,
  };
}

/**
 * A log never polled, whose first poll is due by NOW + `deadlineIn` and must start by NOW +
 * `startIn` for every new log to meet its deadline at the budget's pace.
 */
function fresh(key: string, deadlineIn: number, startIn = deadlineIn, interval = 10 * MIN): LogCandidate {
  return {
    key,
    earliestAt: Number.NEGATIVE_INFINITY,
    anchorAt: NOW + deadlineIn - interval,
    intervalMs: interval,
    starvingMs: 54 * MIN,
    followUpDueAt: null,
    firstPollAt: NOW + startIn,
  };
}

function snapshot(extra: Partial<LoopSnapshot> = {}): LoopSnapshot {
  return {
    pause: undefined,
    discovery: { dueAt: undefined, running: false },
    freeSlots: 4,
    budget: { sendAt: NOW, waitingDiscoveryOrHigher: 0, waiting: 0 },
    logs: [],
    inFlight: new Set(),
    backoffUntil: new Map(),
    ...extra,
  };
}

const pause = (until: number, extra: Partial<KeyPause> = {}): KeyPause => ({
  until,
  forCredential: false,
  keyReplaced: false,
  ...extra,
});

const budget = (sendAt: number, waiting = 0, waitingDiscoveryOrHigher = 0) => ({
  sendAt,
  waiting,
  waitingDiscoveryOrHigher,
});

describe('nextAction', () => {
  const cases: [string, Partial<LoopSnapshot>, NextAction][] = [
    ['polls the log that is due', { logs: [log('career:a', 11 * MIN)] }, { launch: 'poll', key: 'career:a' }],
    [
      'polls the most urgent of several due logs (waited / interval)',
      { logs: [log('career:a', 11 * MIN), log('career:b', 25 * MIN, 20 * MIN), log('career:c', 12 * MIN)] },
      { launch: 'poll', key: 'career:b' },
    ],
    [
      'leaves no slot unused: a log past its minimum interval but not yet due is polled',
      { logs: [log('career:a', 3 * MIN)] },
      { launch: 'poll', key: 'career:a' },
    ],
    [
      'waits out the minimum interval of a log polled a moment ago',
      { logs: [log('career:a', 10_000)] },
      { wakeAt: NOW - 10_000 + MIN },
    ],
    [
      'a follow-up goes before a regular log that waited longer',
      {
        logs: [log('career:a', 15 * MIN), log('career:b', 2 * MIN, 10 * MIN, { followUpDueAt: NOW - 1 })],
      },
      { launch: 'poll', key: 'career:b' },
    ],
    [
      'a log about to break maxIntervalMinutes goes before a follow-up',
      {
        logs: [log('career:a', 2 * MIN, 10 * MIN, { followUpDueAt: NOW - 1 }), log('career:quiet', 55 * MIN, 60 * MIN)],
      },
      { launch: 'poll', key: 'career:quiet' },
    ],
    [
      'with budget to spare (interval 0) the log that waited longest goes first',
      { logs: [log('career:a', 2 * MIN, 0), log('career:b', 3 * MIN, 0), log('career:c', MIN, 0)] },
      { launch: 'poll', key: 'career:b' },
    ],
    [
      'skips a log in its failure backoff and wakes when the backoff ends',
      { logs: [log('career:a', 20 * MIN)], backoffUntil: new Map([['career:a', NOW + 7_000]]) },
      { wakeAt: NOW + 7_000 },
    ],
    [
      'skips a log in backoff for the next one',
      {
        logs: [log('career:a', 20 * MIN), log('career:b', 11 * MIN)],
        backoffUntil: new Map([['career:a', NOW + 7_000]]),
      },
      { launch: 'poll', key: 'career:b' },
    ],
    [
      'never polls a log twice at once',
      { logs: [log('career:a', 20 * MIN), log('career:b', 11 * MIN)], inFlight: new Set(['career:a']) },
      { launch: 'poll', key: 'career:b' },
    ],
    [
      'waits for the budget: the next request may leave later (pace, or a 429 Retry-After)',
      { logs: [log('career:a', 20 * MIN)], budget: budget(NOW + 3_600_000) },
      { wakeAt: NOW + IDLE_WAKE_MS },
    ],
    [
      'waits for the budget slot when it comes sooner than the idle wake',
      { logs: [log('career:a', 20 * MIN)], budget: budget(NOW + 4_000) },
      { wakeAt: NOW + 4_000 },
    ],
    [
      'with backfill pages waiting, a due poll is launched ahead of the slot',
      { logs: [log('career:a', 11 * MIN)], budget: budget(NOW + 4_000, 3) },
      { launch: 'poll', key: 'career:a' },
    ],
    [
      'with backfill pages waiting, a log not yet due leaves them the slot until it is due',
      { logs: [log('career:a', 9.5 * MIN)], budget: budget(NOW, 3) },
      { wakeAt: NOW + 30_000 },
    ],
    [
      'with backfill waiting, a pending follow-up is looked at when it falls due',
      { logs: [log('career:a', 4 * MIN, 10 * MIN, { followUpDueAt: NOW + MIN })], budget: budget(NOW, 3) },
      { wakeAt: NOW + MIN },
    ],
    [
      'requests of discovery priority waiting take the next slot: look again just after it',
      { logs: [log('career:a', 20 * MIN)], budget: budget(NOW + 4_000, 2, 1) },
      { wakeAt: NOW + 4_001 },
    ],
    [
      'a key-wide pause (rejected key, 429 on every poll, full disk) holds everything, discovery too',
      { pause: pause(NOW + 30_000), logs: [log('career:a', 20 * MIN)], discovery: { dueAt: NOW, running: false } },
      { wakeAt: NOW + 30_000 },
    ],
    [
      'a pause that has ended holds nothing',
      { pause: pause(NOW), logs: [log('career:a', 20 * MIN)] },
      { launch: 'poll', key: 'career:a' },
    ],
    [
      'a pause for a rejected key looks at the key file every second',
      { pause: pause(NOW + 5 * MIN, { forCredential: true }), logs: [log('career:a', 20 * MIN)] },
      { wakeAt: NOW + KEY_FILE_CHECK_MS },
    ],
    [
      'a pause for a rejected key ending within the second wakes at its end',
      { pause: pause(NOW + 300, { forCredential: true }) },
      { wakeAt: NOW + 300 },
    ],
    [
      'a pause for a rejected key ends when the key file was replaced',
      { pause: pause(NOW + 5 * MIN, { forCredential: true, keyReplaced: true }), logs: [log('career:a', 20 * MIN)] },
      { resume: 'keyReplaced' },
    ],
    [
      'a replaced key file does not end a pause for another reason (trial expired, full disk)',
      { pause: pause(NOW + 5 * MIN, { keyReplaced: true }) },
      { wakeAt: NOW + 5 * MIN },
    ],
    [
      'a replaced key file after the pause ended changes nothing',
      { pause: pause(NOW, { forCredential: true, keyReplaced: true }), logs: [log('career:a', 20 * MIN)] },
      { launch: 'poll', key: 'career:a' },
    ],
    [
      'discovery that is due goes before any poll',
      { discovery: { dueAt: NOW - 5, running: false }, logs: [log('career:a', 20 * MIN)] },
      { launch: 'discovery' },
    ],
    [
      'discovery due soon caps the wait',
      { discovery: { dueAt: NOW + 2_000, running: false }, logs: [log('career:a', 10_000)] },
      { wakeAt: NOW + 2_000 },
    ],
    [
      'a running discovery is not launched again, and its past due time does not wake the loop',
      { discovery: { dueAt: NOW - 5, running: true }, logs: [log('career:a', 10_000)] },
      { wakeAt: NOW - 10_000 + MIN },
    ],
    [
      'all slots busy: a finishing poll wakes the loop (the idle wake is only a safety net)',
      { freeSlots: 0, logs: [log('career:a', 20 * MIN)] },
      { wakeAt: NOW + IDLE_WAKE_MS },
    ],
    [
      'all slots busy, discovery due soon',
      { freeSlots: 0, discovery: { dueAt: NOW + 5_000, running: false } },
      { wakeAt: NOW + 5_000 },
    ],
    [
      'a log never polled is polled at once when the budget has a slot, long before its deadline',
      { logs: [fresh('career:new', MIN, 30_000)] },
      { launch: 'poll', key: 'career:new' },
    ],
    [
      'a log never polled takes an idle slot ahead of a log that is not yet due',
      { logs: [log('career:a', 3 * MIN), fresh('career:new', MIN, 30_000)] },
      { launch: 'poll', key: 'career:new' },
    ],
    [
      'a due log goes before a log never polled whose latest start is still ahead',
      { logs: [fresh('career:new', MIN, 30_000), log('career:a', 11 * MIN)] },
      { launch: 'poll', key: 'career:a' },
    ],
    [
      'from its latest start a first poll goes before due logs and follow-ups',
      {
        logs: [
          log('career:a', 15 * MIN),
          log('career:b', 2 * MIN, 10 * MIN, { followUpDueAt: NOW - 1 }),
          fresh('career:new', 5_000, 0),
        ],
      },
      { launch: 'poll', key: 'career:new' },
    ],
    [
      'first polls past their latest start go earliest deadline first',
      { logs: [fresh('career:later', 8_000, -4_000), fresh('career:sooner', 4_000, -8_000)] },
      { launch: 'poll', key: 'career:sooner' },
    ],
    [
      'a first poll past its deadline is still polled first, however long the budget kept it waiting',
      { logs: [log('career:a', 20 * MIN), fresh('career:new', -5 * MIN, -6 * MIN)] },
      { launch: 'poll', key: 'career:new' },
    ],
    [
      'the maxIntervalMinutes floor still goes before a first poll',
      { logs: [fresh('career:new', 5_000, -1), log('career:quiet', 55 * MIN, 60 * MIN)] },
      { launch: 'poll', key: 'career:quiet' },
    ],
    [
      'with backfill waiting, a first poll leaves the slot until its latest start, and wakes then',
      { logs: [fresh('career:new', MIN, 20_000)], budget: budget(NOW, 3) },
      { wakeAt: NOW + 20_000 },
    ],
    [
      'with backfill waiting, a first poll past its latest start is launched ahead of the slot',
      { logs: [fresh('career:new', MIN, -1)], budget: budget(NOW + 4_000, 3) },
      { launch: 'poll', key: 'career:new' },
    ],
    ['nothing to poll', {}, { wakeAt: NOW + IDLE_WAKE_MS }],
    [
      'a wake-up time already past becomes a short wait, never a busy loop',
      { logs: [log('career:a', 20 * MIN)], backoffUntil: new Map([['career:a', NOW + 1]]) },
      { wakeAt: NOW + MIN_WAKE_MS },
    ],
  ];

  it.each(cases)('%s', (_name, extra, expected) => {
    expect(nextAction(NOW, snapshot(extra))).toEqual(expected);
  });

  it('without a budget (tests) nothing waits for a slot', () => {
    expect(nextAction(NOW, snapshot({ budget: undefined, logs: [log('career:a', 3 * MIN)] }))).toEqual({
      launch: 'poll',
      key: 'career:a',
    });
  });
});

describe('nextAction in once mode (run --once)', () => {
  const once = (remaining: string[] | undefined): LoopSnapshot['once'] => ({
    remaining: remaining && new Set(remaining),
  });
  const cases: [string, Partial<LoopSnapshot>, NextAction][] = [
    [
      'discovery goes first',
      { once: once(undefined), discovery: { dueAt: NOW, running: false } },
      { launch: 'discovery' },
    ],
    [
      'polls wait while discovery runs: its end wakes the loop, not its past due time',
      { once: once(undefined), discovery: { dueAt: NOW - 5, running: true }, logs: [log('career:a', 20 * MIN)] },
      { wakeAt: NOW + IDLE_WAKE_MS },
    ],
    [
      'discovery tried again after its backoff holds the polls until then',
      { once: once(['career:a']), discovery: { dueAt: NOW + 5_000, running: false } },
      { wakeAt: NOW + 5_000 },
    ],
    ['the logs are not read yet: nothing to decide on', { once: once(undefined) }, { wakeAt: NOW + IDLE_WAKE_MS }],
    [
      'a log polled a moment ago is polled again: the sweep ignores the schedule',
      { once: once(['career:a']), logs: [log('career:a', 1_000)] },
      { launch: 'poll', key: 'career:a' },
    ],
    [
      'the budget does not hold a launch: the poll waits for its slot itself',
      { once: once(['career:a']), budget: budget(NOW + 3_600_000, 5, 2) },
      { launch: 'poll', key: 'career:a' },
    ],
    [
      'a key-wide pause does not hold the sweep: every log is tried once',
      { once: once(['career:b']), pause: pause(NOW + 60 * MIN, { forCredential: true }) },
      { launch: 'poll', key: 'career:b' },
    ],
    [
      'never polls a log twice at once',
      { once: once(['career:a', 'career:b']), inFlight: new Set(['career:a']) },
      { launch: 'poll', key: 'career:b' },
    ],
    [
      'a log the failure policy retries waits for its backoff',
      { once: once(['career:a']), backoffUntil: new Map([['career:a', NOW + 7_000]]) },
      { wakeAt: NOW + 7_000 },
    ],
    [
      'all slots busy: a finishing poll wakes the loop',
      { once: once(['career:a', 'career:b']), freeSlots: 0, inFlight: new Set(['career:c']) },
      { wakeAt: NOW + IDLE_WAKE_MS },
    ],
    [
      'the last polls in flight: their end wakes the loop',
      { once: once(['career:a']), inFlight: new Set(['career:a']) },
      { wakeAt: NOW + IDLE_WAKE_MS },
    ],
    ['stops when every log was polled or given up and nothing is in flight', { once: once([]) }, { stop: 'swept' }],
    [
      'does not stop while a poll is in flight',
      { once: once([]), inFlight: new Set(['career:a']) },
      { wakeAt: NOW + IDLE_WAKE_MS },
    ],
    [
      'a backoff already past becomes a short wait, never a busy loop',
      { once: once(['career:a']), backoffUntil: new Map([['career:a', NOW + 1]]), inFlight: new Set(['x']) },
      { wakeAt: NOW + MIN_WAKE_MS },
    ],
  ];

  it.each(cases)('%s', (_name, extra, expected) => {
    expect(nextAction(NOW, snapshot(extra))).toEqual(expected);
  });
});

describe('urgencyOf', () => {
  it.each([
    ['not before the minimum interval', log('k', 30_000), null],
    ['regular, due at 1', log('k', 10 * MIN), { priority: 'regular', urgency: 1 }],
    ['regular, half way', log('k', 5 * MIN), { priority: 'regular', urgency: 0.5 }],
    ['starving from starvingMs on', log('k', 54 * MIN, 60 * MIN), { priority: 'starving', urgency: 1 }],
    ['follow-up once due', log('k', 5 * MIN, 10 * MIN, { followUpDueAt: NOW }), { priority: 'followUp', urgency: 0.5 }],
    [
      'follow-up not yet due',
      log('k', 5 * MIN, 10 * MIN, { followUpDueAt: NOW + 1 }),
      { priority: 'regular', urgency: 0.5 },
    ],
    ['unpaced', log('k', 5 * MIN, 0), { priority: 'unpaced', urgency: 5 * MIN }],
    [
      'never polled, before its latest start: regular, reaching 1 at its deadline',
      fresh('k', MIN, 30_000),
      { priority: 'regular', urgency: 0.9 },
    ],
    [
      'never polled, from its latest start on: first poll',
      fresh('k', MIN, -2_000),
      { priority: 'firstPoll', urgency: 2_000 },
    ],
    ['never polled, unpaced budget', fresh('k', MIN, MIN, 0), { priority: 'unpaced', urgency: -MIN }],
  ] as const)('%s', (_name, candidate, expected) => {
    expect(urgencyOf(candidate, NOW)).toEqual(expected);
  });
});
