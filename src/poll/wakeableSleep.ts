import type { Clock } from '../clock.js';
import { AbortedError, isAbortError } from '../errors.js';

/**
 * The reason every wake aborts with. `AbortController.abort()` without a reason builds a
 * DOMException (and the clock an AbortedError), each with a stack: at 5,000 tenants the poll
 * loops and read budgets woke about 2,500 times a second, and that was 3 to 4% of the daemon's
 * CPU. The clocks reject with this one instead (`abortedBy`).
 */
const WOKEN = new AbortedError('woken early');

/**
 * A sleep on the injected clock that the loop's other parts can end early: the poll loop's wait
 * for its next decision (a poll ended) and the read budget's wait for the next slot (a response
 * showed budget). A wake while nothing sleeps is dropped, as it always was: the sleeper decides
 * again after every wait and sees what changed. The controller is kept until a wake aborts it.
 */
export class WakeableSleep {
  private controller = new AbortController();
  private sleeping = false;

  constructor(private readonly clock: Clock) {}

  /** Waits `ms`, or less when woken; resolves either way. */
  async sleep(ms: number): Promise<void> {
    if (this.controller.signal.aborted) this.controller = new AbortController();
    this.sleeping = true;
    try {
      await this.clock.sleep(ms, this.controller.signal);
    } catch (error) {
      if (!isAbortError(error)) throw error;
    } finally {
      this.sleeping = false;
    }
  }

  /** Ends the sleep in progress, if any. */
  wake(): void {
    if (this.sleeping) this.controller.abort(WOKEN);
  }
}
