import type { Clock } from '../clock.js';
import type { ResponseMeta } from '../api/responseHeaders.js';

/**
 * The service's clock as seen through the `Date` header. Windows end at the service's "now", not
 * ours, so a skewed local clock cannot make a window end in the service's future (and miss entries
 * written there later). `Date` has one-second resolution and lags up to a second; a window that
 * ends a little early only means its last second is read again by the next, overlapping window.
 */
export class ServerClock {
  private offsetMs: number | undefined;

  constructor(private readonly clock: Clock) {}

  observe(meta: ResponseMeta): void {
    if (meta.serverDate !== undefined) this.offsetMs = meta.serverDate - meta.receivedAt;
  }

  /** True once any response carried a Date header. */
  get synchronised(): boolean {
    return this.offsetMs !== undefined;
  }

  now(): number {
    return this.clock.now() + (this.offsetMs ?? 0);
  }
}
