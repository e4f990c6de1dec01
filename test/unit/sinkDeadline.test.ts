import { getEventListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AbortedError } from '../../src/errors.js';
import { settleWithin, throwIfAborted, waitWithin } from '../../src/sinks/deadline.js';

/** A promise the test settles by hand, when it likes. */
function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void; reject: (error: Error) => void } {
  let resolve!: (value: T) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** What a wait settled with, recorded without awaiting it. */
function outcomeOf<T>(wait: Promise<T>): { current: { value: T } | { error: unknown } | 'pending' } {
  const outcome: { current: { value: T } | { error: unknown } | 'pending' } = { current: 'pending' };
  wait.then(
    (value) => (outcome.current = { value }),
    (error: unknown) => (outcome.current = { error }),
  );
  return outcome;
}

const abortListeners = (signal: AbortSignal): number => getEventListeners(signal, 'abort').length;

let unhandled: unknown[] = [];
const onUnhandled = (reason: unknown): void => void unhandled.push(reason);

beforeEach(() => {
  vi.useFakeTimers();
  unhandled = [];
  process.on('unhandledRejection', onUnhandled);
});

afterEach(() => {
  process.off('unhandledRejection', onUnhandled);
  vi.useRealTimers();
});

type Step = 'resolve' | 'reject' | 'abort' | { advanceMs: number };

interface Case {
  name: string;
  /** What happens, in order, after the wait started (`advanceMs` moves the fake clock). */
  steps: Step[];
  abortedBefore?: boolean;
  timeoutMs?: number;
  /** What settleWithin gave: the value, `undefined` (gave up) or the promise's error. */
  settled: { value: string } | undefined | 'error';
}

const failure = new Error('the broker said no');

const cases: Case[] = [
  { name: 'the value when the promise resolves in time', timeoutMs: 100, steps: ['resolve'], settled: { value: 'v' } },
  { name: 'the rejection when the promise fails in time', timeoutMs: 100, steps: ['reject'], settled: 'error' },
  { name: 'gives up once the time limit passes', timeoutMs: 100, steps: [{ advanceMs: 100 }], settled: undefined },
  {
    name: 'waits the whole time limit, not less',
    timeoutMs: 100,
    steps: [{ advanceMs: 99 }, 'resolve'],
    settled: { value: 'v' },
  },
  { name: 'gives up when the signal aborts', timeoutMs: 100, steps: ['abort'], settled: undefined },
  { name: 'gives up on abort without a time limit', steps: ['abort'], settled: undefined },
  {
    name: 'waits without a time limit for ever',
    steps: [{ advanceMs: 3_000_000_000 }, 'resolve'],
    settled: { value: 'v' },
  },
  {
    name: 'gives up at once on a signal aborted before, even if the promise is already resolved',
    abortedBefore: true,
    timeoutMs: 100,
    steps: ['resolve'],
    settled: undefined,
  },
  {
    name: 'gives up at once on a signal aborted before, and a later rejection stays handled',
    abortedBefore: true,
    steps: ['reject'],
    settled: undefined,
  },
  {
    name: 'ignores a resolution after the time limit',
    timeoutMs: 100,
    steps: [{ advanceMs: 100 }, 'resolve'],
    settled: undefined,
  },
  {
    name: 'ignores a rejection after the time limit (no unhandled rejection)',
    timeoutMs: 100,
    steps: [{ advanceMs: 100 }, 'reject'],
    settled: undefined,
  },
  {
    name: 'ignores a rejection after an abort (no unhandled rejection)',
    timeoutMs: 100,
    steps: ['abort', 'reject'],
    settled: undefined,
  },
  {
    name: 'ignores an abort after the promise resolved',
    timeoutMs: 100,
    steps: ['resolve', 'abort', { advanceMs: 100 }],
    settled: { value: 'v' },
  },
  {
    name: 'caps a time limit beyond what a Node timer can hold instead of firing at once',
    timeoutMs: 2 ** 31 + 10,
    steps: [{ advanceMs: 1_000 }, 'resolve'],
    settled: { value: 'v' },
  },
];

async function run(c: Case, wait: (promise: Promise<string>, signal: AbortSignal) => Promise<unknown>) {
  const work = deferred<string>();
  const controller = new AbortController();
  if (c.abortedBefore) controller.abort();
  const outcome = outcomeOf(wait(work.promise, controller.signal));
  for (const step of c.steps) {
    if (step === 'resolve') work.resolve('v');
    else if (step === 'reject') work.reject(failure);
    else if (step === 'abort') controller.abort(new Error('shutting down'));
    else await vi.advanceTimersByTimeAsync(step.advanceMs);
    await vi.advanceTimersByTimeAsync(0);
  }
  return { outcome };
}

describe('settleWithin', () => {
  it.each(cases)('$name', async (c) => {
    let watched: AbortSignal[] = [];
    const { outcome } = await run(c, (promise, signal) => {
      watched = [signal, new AbortController().signal];
      return settleWithin(promise, { timeoutMs: c.timeoutMs, signals: watched });
    });
    if (c.settled === 'error') expect(outcome.current).toEqual({ error: failure });
    else expect(outcome.current).toEqual({ value: c.settled });
    // However it ended: no timer left, and no listener on signals that may live for days.
    expect(vi.getTimerCount()).toBe(0);
    for (const signal of watched) expect(abortListeners(signal)).toBe(0);
    expect(unhandled).toEqual([]);
  });

  it('settles with undefined at once when one of several signals has aborted', async () => {
    const aborted = AbortSignal.abort();
    const live = new AbortController().signal;
    const outcome = outcomeOf(settleWithin(new Promise(() => undefined), { signals: [live, aborted] }));
    await vi.advanceTimersByTimeAsync(0);
    expect(outcome.current).toEqual({ value: undefined });
    expect(abortListeners(live)).toBe(0);
  });
});

describe('waitWithin', () => {
  const timedOut = new Error('no answer within 100 ms');
  const expected = (c: Case): { value: string } | { error: unknown } => {
    if (c.settled === 'error') return { error: failure };
    if (c.settled !== undefined) return c.settled;
    // Gave up: an abort names what was aborted; a time limit gives the caller's error.
    return c.steps.includes('abort') || c.abortedBefore
      ? { error: new AbortedError('write to Redis at redis://127.0.0.1:6379/0 aborted') }
      : { error: timedOut };
  };

  it.each(cases)('$name', async (c) => {
    let signal: AbortSignal | undefined;
    const { outcome } = await run(c, (promise, s) => {
      signal = s;
      const what = 'write to Redis at redis://127.0.0.1:6379/0';
      return c.timeoutMs === undefined
        ? waitWithin(promise, { what, signal: s })
        : waitWithin(promise, { what, signal: s, timeoutMs: c.timeoutMs, onTimeout: () => timedOut });
    });
    expect(outcome.current).toEqual(expected(c));
    const current = outcome.current as { error?: unknown };
    // Every sink reports an abort the same way, whatever reason the signal carries.
    if (current.error instanceof AbortedError) expect(current.error.code).toBe('ABORTED');
    expect(vi.getTimerCount()).toBe(0);
    expect(abortListeners(signal!)).toBe(0);
    expect(unhandled).toEqual([]);
  });
});

describe('throwIfAborted', () => {
  it.each([
    { name: 'passes while the signal is live', aborted: false, throws: undefined },
    { name: 'throws an AbortedError naming what once it aborted', aborted: true, throws: 'connect to NATS aborted' },
  ])('$name', ({ aborted, throws }) => {
    const controller = new AbortController();
    if (aborted) controller.abort(new Error('some other reason'));
    const attempt = (): void => throwIfAborted(controller.signal, 'connect to NATS');
    if (throws === undefined) expect(attempt).not.toThrow();
    else expect(attempt).toThrow(new AbortedError(throws));
  });
});
