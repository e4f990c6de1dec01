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
