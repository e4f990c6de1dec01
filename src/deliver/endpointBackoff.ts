import { MAX_TIMER_MS } from '../clock.js';
import { MAX_RETRY_AFTER_MS } from '../retryAfter.js';
import type { EndpointBackoffConfig } from '../sinkContract/deliveryConfig.js';
import type { SinkStateRow } from '../store/storeRecords.js';

/** A destination's run of endpoint-level failures: none while it delivers. */
export interface EndpointFailureRun {
  /** When the first failure of the run happened; null while the endpoint delivers. */
  failingSince: number | null;
  /** Endpoint-level failures in a row. */
  failures: number;
}

export const NO_FAILURES: EndpointFailureRun = { failingSince: null, failures: 0 };

export type EndpointDecision =
  | { kind: 'backOff'; run: EndpointFailureRun; until: number }
  | { kind: 'disable'; run: EndpointFailureRun; reason: string };

/** The largest share of a scheduled pause added as jitter, so many senders' probes do not come in waves. */
const JITTER = 0.1;

/**
 * What one more endpoint-level failure at `now` means: the endpoint pauses for the schedule's next
 * delay (the last repeats; lengthened by up to 10% jitter; never shorter than the destination's
 * Retry-After), or, once every attempt has failed for `disableAfterSeconds`, the sink is disabled.
 */
export function decideEndpointFailure(
  previous: EndpointFailureRun,
  now: number,
  config: EndpointBackoffConfig,
  retryAfterMs?: number,
  random: () => number = Math.random,
): EndpointDecision {
  const run = { failingSince: previous.failingSince ?? now, failures: previous.failures + 1 };
  const failingMs = now - run.failingSince;
  if (config.disableAfterSeconds > 0 && failingMs >= config.disableAfterSeconds * 1000) {
    return {
      kind: 'disable',
      run,
      reason: `every attempt failed for ${formatDuration(failingMs)} (${run.failures} in a row; disableAfterSeconds ${config.disableAfterSeconds})`,
    };
  }
  const scheduled = config.scheduleMs[Math.min(run.failures, config.scheduleMs.length) - 1] ?? 0;
  const jittered = Math.floor(scheduled * (1 + JITTER * random()));
  const floor = retryAfterMs === undefined ? 0 : Math.min(retryAfterMs, MAX_RETRY_AFTER_MS);
  return { kind: 'backOff', run, until: now + Math.min(MAX_TIMER_MS, Math.max(jittered, floor)) };
}

/** What the store recorded of a sink's endpoint when its worker last ran. */
export type RecordedEndpointState = Pick<SinkStateRow, 'disabledReason' | 'failingSince'>;

/**
 * Where a sink's worker starts: disabled (it stays so until `changefeed sinks enable`), resuming
 * a failure run (one probe at once; the give-up clock runs on from when the run began, the
 * schedule starts again from its first pause), or afresh.
 */
export type EndpointStart =
  { kind: 'disabled'; reason: string } | { kind: 'resume'; run: EndpointFailureRun } | { kind: 'fresh' };

/**
 * The start a recorded state means at `now`. A run recorded as starting after `now` (a clock set
 * back since) begins now instead: it could otherwise never reach the give-up rule.
 */
export function decideEndpointStart(recorded: RecordedEndpointState | undefined, now: number): EndpointStart {
  if (recorded?.disabledReason != null) return { kind: 'disabled', reason: recorded.disabledReason };
  if (recorded?.failingSince == null) return { kind: 'fresh' };
  return { kind: 'resume', run: { failingSince: Math.min(recorded.failingSince, now), failures: 0 } };
}

function formatDuration(ms: number): string {
  const hours = ms / 3_600_000;
  return hours >= 48
    ? `${Math.round(hours / 24)} days`
    : hours >= 1
      ? `${Math.round(hours)} h`
      : `${Math.round(ms / 1000)} s`;
}
