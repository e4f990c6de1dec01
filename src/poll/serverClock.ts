import type { Clock } from '../clock.js';
import type { ResponseMeta } from '../api/responseHeaders.js';

/** Answers in a row that must agree on a jumped clock before it is believed. */
export const CLOCK_CONFIRMATIONS = 3;
/** How closely those answers must agree (Date has one-second resolution, plus network time). */
const AGREEMENT_MS = 5_000;
/** `Date` counts whole seconds: the service's clock read anywhere in the second after it. */
const DATE_RESOLUTION_MS = 1_000;
/**
 * Recent answers whose bounds are combined: enough for the Date header's second boundary to fall
 * at many phases of it (n answers leave about 1000 / n ms), few enough that one answer of a clock
 * that has since drifted does not hold the estimate for long.
 */
export const OFFSET_SAMPLES = 32;

/**
 * What one answer proves about the offset of the service's clock from ours (ms): the service read
 * its clock between `sentAt` and `receivedAt` (ours) and wrote the whole second it was in, so the
 * offset is at least `Date − receivedAt` and less than `Date + 1 s − sentAt`.
 */
export interface OffsetBounds {
  low: number;
  high: number;
}

export function offsetBounds(meta: ResponseMeta): OffsetBounds | undefined {
  if (meta.serverDate === undefined) return undefined;
  return {
    low: meta.serverDate - meta.receivedAt,
    high: meta.serverDate + DATE_RESOLUTION_MS - (meta.sentAt ?? meta.receivedAt),
  };
}

/**
 * The lower bounds of recent answers after one more: the offset believed is their maximum, the
 * latest service time every answer allows, so windows never end in the service's future. An
 * answer whose upper bound is below that maximum shows the clocks have moved apart since (drift,
 * or a step within the tolerance): the older bounds no longer hold and the answer starts afresh.
 */
export function nextOffsetSamples(samples: readonly number[], bounds: OffsetBounds): number[] {
  const kept = samples.length > 0 && bounds.high < Math.max(...samples) ? [] : samples.slice(-(OFFSET_SAMPLES - 1));
  return [...kept, bounds.low];
}

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
 * The service's clock as seen through the `Date` header (docs/delivery.md, "Windows and overlap"):
 * windows end at the service's "now", not ours, so a skewed local clock cannot make a window end in
 * the service's future. Every `Date` is judged, not trusted: an offset that jumps more than the
 * tolerance from the one believed so far (0 before the first answer) is not believed until
 * CLOCK_CONFIRMATIONS answers in a row agree, so one answer 30 days ahead cannot move a cursor.
 */
export class ServerClock {
  private offsetMs: number | undefined;
  /** Lower bounds of the offset from recent believed answers (nextOffsetSamples). */
  private samples: number[] = [];
  private candidate: { offsetMs: number; agreeing: number } | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly options: ServerClockOptions = { toleranceMs: 300_000 },
  ) {}

  observe(meta: ResponseMeta): void {
    const bounds = offsetBounds(meta);
    if (bounds === undefined) return;
    const offsetMs = bounds.low;
    const jumpMs = offsetMs - (this.offsetMs ?? 0);
    if (Math.abs(jumpMs) <= this.options.toleranceMs) {
      this.believe(nextOffsetSamples(this.samples, bounds));
      return;
    }
    const agrees = this.candidate !== undefined && Math.abs(this.candidate.offsetMs - offsetMs) <= AGREEMENT_MS;
    this.candidate = { offsetMs, agreeing: agrees ? (this.candidate?.agreeing ?? 0) + 1 : 1 };
    if (this.candidate.agreeing >= CLOCK_CONFIRMATIONS) {
      // The clock really moved: what earlier answers said of the old offset no longer holds.
      this.believe([offsetMs]);
      return;
    }
    this.options.onRejected?.({ offsetMs, jumpMs, agreeing: this.candidate.agreeing });
  }

  private believe(samples: number[]): void {
    this.samples = samples;
    this.offsetMs = Math.max(...samples);
    this.candidate = undefined;
  }

  /** The believed offset of the service's clock from ours, ms (positive: the service is ahead). */
  get skewMs(): number {
    return this.offsetMs ?? 0;
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
