import type { Clock, SleepSignal } from '../clock.js';
import { AbortedError, isAbortError } from '../errors.js';

/**
 * The reason every wake aborts with: the clocks reject with this one (`abortedBy`) instead of
 * building an error with a stack per wake, thousands of times a second across many tenants.
 */
const WOKEN = new AbortedError('woken early');

/**
 * The signal of a WakeableSleep's sleeps until a wake aborts it: a field or two and an array, where
 * an AbortController costs each wake an EventTarget with two Maps and an Event dispatched.
 */
class WakeSignal implements SleepSignal {
  aborted = false;
  reason: unknown = undefined;
  private listeners: (() => void)[] = [];

  addEventListener(_type: 'abort', listener: () => void): void {
    this.listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const i = this.listeners.indexOf(listener);
    if (i >= 0) this.listeners.splice(i, 1);
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.listeners;
    this.listeners = [];
    for (const listener of listeners) listener();
  }
}

/**
 * A sleep on the injected clock that the loop's other parts can end early: the poll loop's wait
 * for its next decision (a poll ended) and the read budget's wait for the next slot (a response
 * showed budget). A wake while nothing sleeps is dropped: the sleeper decides again after every
 * wait and sees what changed. A woken signal stays aborted for the sleeps that hold it (a clock
 * that awaits before it listens still sees the wake); the next sleep takes a new one.
 */
export class WakeableSleep {
  private signal = new WakeSignal();
  private sleeping = 0;

  constructor(private readonly clock: Clock) {}

  /** Waits `ms`, or less when woken; resolves either way. */
  async sleep(ms: number): Promise<void> {
    if (this.signal.aborted) this.signal = new WakeSignal();
    this.sleeping++;
    try {
      await this.clock.sleep(ms, this.signal);
    } catch (error) {
      if (!isAbortError(error)) throw error;
    } finally {
      this.sleeping--;
    }
  }

  /** Ends the sleeps in progress, if any. */
  wake(): void {
    if (this.sleeping > 0) this.signal.abort(WOKEN);
  }
}
