import { ChangefeedError } from '../errors.js';

/** Base of the errors sinks throw; see the Sink contract in sink.ts for what each one means. */
export abstract class SinkError extends ChangefeedError {}

export class SinkUnavailableError extends SinkError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('SINK_UNAVAILABLE', message, options);
  }
}

export class SinkBackoffError extends SinkError {
  constructor(
    message: string,
    readonly retryAfterMs: number,
  ) {
    super('SINK_BACKOFF', message);
  }
}

export interface ItemFailure {
  error: string;
  /** True when retrying cannot help (the destination refused this event for good). */
  permanent: boolean;
  /** Destination's requested wait before this item is tried again. */
  retryAfterMs?: number;
  /** Status code or similar from the destination, kept with a dead letter. */
  status?: number;
  /** Truncated response body, kept with a dead letter. */
  response?: string;
}

export class SinkPartialFailureError extends SinkError {
  constructor(
    message: string,
    /**
     * Failed items by event id. Ids not listed were written, or were held back unsent behind a
     * failed event of the same ordering key; the engine sends those again after it either way.
     */
    readonly failures: ReadonlyMap<string, ItemFailure>,
  ) {
    super('SINK_PARTIAL_FAILURE', message);
  }
}

/** Throws a SinkPartialFailureError quoting the first failure, when there is any: `<who> refused 2 of 500 events: ...`. */
export function throwIfAnyFailed(failures: ReadonlyMap<string, ItemFailure>, batchSize: number, who: string): void {
  const [first] = failures.values();
  if (first)
    throw new SinkPartialFailureError(
      `${who} refused ${failures.size} of ${batchSize} events: ${first.error}`,
      failures,
    );
}

export class SinkRejectedError extends SinkError {
  constructor(message: string) {
    super('SINK_REJECTED', message);
  }
}

/**
 * The destination says it is gone for good (HTTP 410). The engine stops delivering to this sink
 * and reports it; its events stay pending, so nothing is lost if it is re-enabled.
 */
export class SinkDisabledError extends SinkError {
  constructor(message: string) {
    super('SINK_DISABLED', message);
  }
}

/** Why a destination as a whole is failing: it answered with a status, or did not answer in time, or not at all. */
type EndpointFailureCause = 'status' | 'timeout' | 'connection';

/**
 * The destination as a whole is failing, whatever the event: it refuses our credentials or
 * signature (401, 403), the address is wrong (404, 405, a redirect), it is overloaded or broken
 * (429, 5xx), or it did not answer in time or at all. No event is at fault, so none is charged an
 * attempt or becomes a dead letter: the engine backs the endpoint off on its schedule, keeps the
 * events pending in order, and disables the sink once the give-up rule says so.
 */
export class SinkEndpointFailingError extends SinkError {
  constructor(
    message: string,
    readonly failure: {
      cause: EndpointFailureCause;
      /** The status the destination answered, when it answered. */
      status?: number;
      /** The destination's requested wait (Retry-After): a floor under the schedule's delay. */
      retryAfterMs?: number;
    },
  ) {
    super('SINK_ENDPOINT_FAILING', message);
  }
}
