import type { Clock } from '../clock.js';
import type { ResponseMeta } from '../api/responseHeaders.js';

/** Answers in a row that must agree on a jumped clock before it is believed. */
export const CLOCK_CONFIRMATIONS = 3;
/** How closely those answers must agree (Date has one-second resolution, plus network time). */
const AGREEMENT_MS = 5_000;

/** A `Date` header that was not believed, for the warning, the metric and readiness. */
export interface RejectedClock {
  /** The answer's offset from the local clock, ms (positive: the service claims to be ahead). */
  offsetMs: number;
  /** How far it jumped from the offset believed so far, ms. */
  jumpMs: number;
  /** Answers in a row that agreed on it so far. */
  agreeing: number;
}

export interface ServerClockOptions {
  /** A jump beyond this from the believed offset needs CLOCK_CONFIRMATIONS answers in a row. */
  toleranceMs: number;
  onRejected?: (rejected: RejectedClock) => void;
}

/**
 * The service's clock as seen through the `Date` header. Windows end at the service's "now", not
 * ours, so a skewed local clock cannot make a window end in the service's future (and miss entries
 * written there later). `Date` has one-second resolution and lags up to a second; a window that
 * ends a little early only means its last second is read again by the next, overlapping window.
 *
 * Every `Date` is judged, not trusted: one answer 30 days ahead once moved a cursor 30 days into
 * the future, and entries written afterwards were never read. An answer whose offset from the
 * local clock jumps more than the tolerance from the offset believed so far (the local clock's
 * own, 0, before the first answer) is not believed until CLOCK_CONFIRMATIONS answers in a row
 * agree on it; a service whose clock really moved is followed after a few requests, a single wild
 * answer never is. Meanwhile windows end at the last believable service time.
 */
export class ServerClock {
  private offsetMs: number | undefined;
  private candidate: { offsetMs: number; agreeing: number } | undefined;
  private rejectedTotal = 0;

  constructor(
    private readonly clock: Clock,
    private readonly options: ServerClockOptions = { toleranceMs: 300_000 },
  ) {}

  observe(meta: ResponseMeta): void {
    if (meta.serverDate === undefined) return;
    const offsetMs = meta.serverDate - meta.receivedAt;
    const jumpMs = offsetMs - (this.offsetMs ?? 0);
    if (Math.abs(jumpMs) <= this.options.toleranceMs) {
      this.offsetMs = offsetMs;
      this.candidate = undefined;
      return;
    }
    const agrees = this.candidate !== undefined && Math.abs(this.candidate.offsetMs - offsetMs) <= AGREEMENT_MS;
    this.candidate = { offsetMs, agreeing: agrees ? (this.candidate?.agreeing ?? 0) + 1 : 1 };
    if (this.candidate.agreeing >= CLOCK_CONFIRMATIONS) {
      this.offsetMs = offsetMs;
      this.candidate = undefined;
      return;
    }
    this.rejectedTotal++;
    this.options.onRejected?.({ offsetMs, jumpMs, agreeing: this.candidate.agreeing });
  }

  /** True once any response carried a believed Date header. */
  get synchronised(): boolean {
    return this.offsetMs !== undefined;
  }

  /** The believed offset of the service's clock from ours, ms (positive: the service is ahead). */
  get skewMs(): number {
    return this.offsetMs ?? 0;
  }

  /** Date headers not believed so far. */
  get rejected(): number {
    return this.rejectedTotal;
  }

  /** Set while the latest Date header was not believed: the clock problem readiness reports. */
  problem(): string | undefined {
    if (!this.candidate) return undefined;
    const seconds = Math.round((this.candidate.offsetMs - this.skewMs) / 1000);
    return (
      `the service's Date header is ${Math.abs(seconds)} s ${seconds > 0 ? 'ahead of' : 'behind'} ` +
      `the clock believed so far (tolerance ${this.options.toleranceMs / 1000} s); not ` +
      `believed until ${CLOCK_CONFIRMATIONS} answers in a row agree`
    );
  }

  now(): number {
    return this.clock.now() + this.skewMs;
  }

  /** A local time (such as when a poll succeeded) on the service's clock as believed now. */
  toServerTime(localMs: number): number {
    return localMs + this.skewMs;
  }
}
