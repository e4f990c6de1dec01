import { anySignal } from 'any-signal';
import type { Clock } from '../clock.js';
import { isAbortError } from '../errors.js';

/** Wait until one of the in-flight writes settles (or a notify), instead of for a time. */
export const IN_FLIGHT = 'in-flight' as const;

/**
 * How a sink worker waits between rounds: for a time, for one of its writes in flight to
 * settle, or until notified of new events. The store is read asynchronously, so a notify can
 * come while a round reads it; such a notify makes the next pause return at once instead of
 * being slept through.
 */
export class WorkerWake {
  private wake: AbortController | undefined;
  private woken = false;

  constructor(private readonly clock: Clock) {}

  notify(): void {
    this.woken = true;
    this.wake?.abort();
  }

  /** A round is about to read the outbox: what was notified so far, it will see. */
  reading(): void {
    this.woken = false;
  }

  /** Waits `wait` ms, or until one of `inFlight` settles; a notify or `signal` cut either short. */
  async pause(wait: number | typeof IN_FLIGHT, inFlight: Iterable<Promise<void>>, signal: AbortSignal): Promise<void> {
    if (wait === 0) return;
    if (this.woken) {
      this.woken = false;
      return;
    }
    this.wake = new AbortController();
    // Not AbortSignal.any: on Node 20 every pause would leave an entry on the worker's
    // long-lived signal, for good (nodejs/node#55351).
    const woken = anySignal([signal, this.wake.signal]);
    try {
      if (wait === IN_FLIGHT) {
        const aborted = new Promise<void>((resolve) =>
          woken.addEventListener('abort', () => resolve(), { once: true }),
        );
        await Promise.race([...inFlight, aborted]);
        return;
      }
      await this.clock.sleep(wait, woken).catch((error: unknown) => {
        if (!isAbortError(error)) throw error;
      });
    } finally {
      woken.clear();
    }
  }
}
