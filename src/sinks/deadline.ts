import { timerDelayMs } from '../clock.js';
import { AbortedError } from '../errors.js';

/*
 * How a sink waits for a connection, an acknowledgement or a close that may never come: bounded by
 * a time limit and by abort signals. The engine's signals live for days, so every wait removes its
 * timer and its listeners however it ends, and a late outcome of the abandoned promise is ignored
 * (never an unhandled rejection).
 */

export interface WaitLimits {
  /** Stop waiting after this many ms; no time limit when absent. */
  readonly timeoutMs?: number | undefined;
  /** Stop waiting as soon as one of these aborts (or has aborted). */
  readonly signals?: readonly AbortSignal[];
}

/**
 * `{ value }` once `promise` resolves, or `undefined` when the time limit passes or a signal aborts
 * first: the caller decides what giving up means. A rejection of `promise` before that rejects.
 * The promise keeps running; what it does later is ignored.
 */
export function settleWithin<T>(promise: Promise<T>, limits: WaitLimits): Promise<{ value: T } | undefined> {
  const signals = limits.signals ?? [];
  return new Promise((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const cleanUp = (): void => {
      clearTimeout(timer);
      for (const signal of signals) signal.removeEventListener('abort', giveUp);
    };
    const giveUp = (): void => {
      cleanUp();
      resolve(undefined);
    };
    // Subscribed first, so a rejection after giving up is handled, not reported as unhandled.
    promise.then(
      (value) => {
        cleanUp();
        resolve({ value });
      },
      (error: unknown) => {
        cleanUp();
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
    if (signals.some((signal) => signal.aborted)) return giveUp();
    for (const signal of signals) signal.addEventListener('abort', giveUp, { once: true });
    if (limits.timeoutMs !== undefined) timer = setTimeout(giveUp, timerDelayMs(limits.timeoutMs));
  });
}

/** What a sink waits for, and how long. */
export type Deadline = {
  /** What is waited for, named in the AbortedError: `write to Redis at redis://127.0.0.1:6379/0`. */
  readonly what: string;
  readonly signal: AbortSignal;
} & (
  | {
      readonly timeoutMs: number;
      /** The error a wait past `timeoutMs` rejects with. */ readonly onTimeout: () => Error;
    }
  | { readonly timeoutMs?: undefined; readonly onTimeout?: undefined }
);

/**
 * What `promise` settles with; rejects with an AbortedError naming `what` as soon as `signal`
 * aborts first, and with `onTimeout()` once `timeoutMs` passes first.
 */
export async function waitWithin<T>(promise: Promise<T>, deadline: Deadline): Promise<T> {
  const settled = await settleWithin(promise, { timeoutMs: deadline.timeoutMs, signals: [deadline.signal] });
  if (settled) return settled.value;
  if (deadline.signal.aborted || !deadline.onTimeout) throw abortedError(deadline.what);
  throw deadline.onTimeout();
}

/** Throws an AbortedError naming `what` when `signal` has aborted: before starting what cannot be taken back. */
export function throwIfAborted(signal: AbortSignal, what: string): void {
  if (signal.aborted) throw abortedError(what);
}

/**
 * How every sink reports an abort (shutdown, or the end of `run --once`): an AbortedError, whatever
 * reason the signal carries. The engine leaves the events pending.
 */
export function abortedError(what: string): AbortedError {
  return new AbortedError(`${what} aborted`);
}
