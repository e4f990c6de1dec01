import { AbortedError } from './errors.js';

/**
 * The source of time for everything that waits or schedules. Injected so the scheduler,
 * the read budget and the retry policy can run a simulated day in milliseconds.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch, never going back: deadlines and intervals are measured on it. */
  now(): number;
  /** Resolves after `ms`, or rejects with AbortedError as soon as `signal` aborts. */
  sleep(ms: number, signal?: SleepSignal): Promise<void>;
}

/**
 * What a sleep reads of its signal: an AbortSignal, or an object as small (WakeableSleep's, which
 * a wake can end again and again without a new AbortController each time). A clock adds at most
 * one listener per sleep and removes it when the sleep ends on time.
 */
export interface SleepSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** The longest delay a Node timer takes: beyond it Node fires after 1 ms instead (a busy loop). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** The error a sleep rejects with when `signal` aborts: its reason when that is one already (no new stack). */
export function abortedBy(signal: SleepSignal): AbortedError {
  return signal.reason instanceof AbortedError ? signal.reason : new AbortedError();
}

/** A delay safe to hand to setTimeout: NaN and negatives are 0, anything longer is MAX_TIMER_MS. */
export function timerDelayMs(ms: number): number {
  if (!(ms > 0)) return 0;
  return Math.min(ms, MAX_TIMER_MS);
}

/**
 * The process's clock for every sleep, deadline and interval, leases included: the wall clock at
 * process start (performance.timeOrigin) advanced by the monotonic clock (performance.now, which
 * libuv's timers follow), so a step of the system clock (NTP, an operator, a VM resumed) neither
 * holds waits in progress nor drops leases early. The price: times it records are off by such a
 * step until the next start; CLI commands showing times to people read Date.now, and the
 * service's clock is learned from its Date headers (serverClock.ts).
 */
export const systemClock: Clock = {
  now: () => Math.floor(performance.timeOrigin + performance.now()),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortedBy(signal));
        return;
      }
      // A sleep longer than one timer can hold is a chain of timers: it still lasts `ms`.
      const wakeAt = performance.now() + (Number.isFinite(ms) ? Math.max(0, ms) : ms > 0 ? MAX_TIMER_MS : 0);
      let timer: NodeJS.Timeout;
      const onAbort = (): void => {
        clearTimeout(timer);
        if (signal) reject(abortedBy(signal));
      };
      const arm = (): void => {
        timer = setTimeout(
          () => {
            if (performance.now() < wakeAt) {
              arm();
              return;
            }
            signal?.removeEventListener('abort', onAbort);
            resolve();
          },
          timerDelayMs(wakeAt - performance.now()),
        );
      };
      arm();
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};
