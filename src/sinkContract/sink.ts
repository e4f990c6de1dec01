import type { LogKind } from '../logs.js';

/**
 * One event handed to a sink. `json` is the CloudEvent in structured JSON mode, exactly as
 * stored; sinks send it (or its parts) and never rebuild it, so every sink and every replay
 * carries byte-identical events.
 */
export interface OutboundEvent {
  /**
   * The event's journal position: ingestion order within its tenant, the same number the feed's
   * cursor stands for. Per ordering key, the engine hands events over in increasing seq.
   */
  readonly seq: number;
  /** The company the event belongs to: its `tenant` attribute (`default` for a single-company config). */
  readonly tenant: string;
  /** CloudEvent id: stable across retries, replays and restarts; use it to deduplicate. */
  readonly id: string;
  /** CloudEvent type, `<prefix>.<log>.<event>`. */
  readonly type: string;
  readonly log: LogKind;
  /** Career or skill id; '' for the identity-provider log. */
  readonly objectId: string;
  /** `<log>:<objectId>`: events with the same key must reach the destination in order. */
  readonly orderingKey: string;
  readonly json: string;
  /** 1 on the first attempt of this event on this sink. */
  readonly attempt: number;
}

/**
 * A destination for events. A sink only connects, writes and closes: it never retries, never
 * sleeps and never reorders. It reports every failure by throwing one of the errors in
 * sinkErrors.ts, and the delivery engine decides what happens next:
 *
 * - `SinkUnavailableError`: not connected or connection lost; the engine reconnects with backoff
 *   and resends the batch. Does not count as an attempt of the events.
 * - `SinkEndpointFailingError`: a third-party endpoint failing as a whole (refused, unreachable,
 *   answering 401 or 5xx), from `connect` or `write`: the events keep their attempts and stay
 *   pending, the endpoint backs off on its schedule and is disabled by the give-up rule. Brokers
 *   and databases the operator runs throw SinkUnavailableError instead and are reconnected for ever.
 * - `SinkBackoffError(ms)`: the destination asked to slow down; nothing is sent for `ms`.
 * - `SinkPartialFailureError`: some events of the batch failed (each transient or permanent);
 *   the rest were written, except that events after a failed one of the same ordering key may be
 *   held back unsent: the engine treats every event after the first failure of a key as not
 *   written and sends it again after the failed one (so they need not be listed).
 * - `SinkRejectedError`: the whole batch was refused for good; its events become dead letters.
 * - anything else: a transient failure of the whole batch, retried with backoff.
 *
 * Contract:
 * - `connect` is called before the first write and, after a SinkUnavailableError, again once
 *   `close` has been called to release what is left of the lost connection.
 * - `write` resolves only once the destination has durably accepted every event of the batch
 *   (fsync, publisher confirm, 2xx). Resolving early breaks at-least-once.
 * - `write` is never called concurrently for two batches holding the same ordering key, and a
 *   batch lists events of one key in seq order. With `maxInFlight` > 1, batches of other keys may
 *   be written at the same time.
 * - `close` releases everything, must not throw and must be idempotent: it is called on shutdown
 *   and before every reconnect.
 */
export interface Sink {
  readonly name: string;
  readonly type: string;
  readonly limits: SinkLimits;
  connect(signal: AbortSignal): Promise<void>;
  write(batch: readonly OutboundEvent[], signal: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

export interface SinkLimits {
  /** Most events in one `write`; a configured batch size is capped to it. */
  maxBatchSize: number;
  /** Most `write` calls the sink supports in flight at once; a configured concurrency is capped to it. */
  maxInFlight: number;
  /** Concurrency when the config sets none; maxInFlight when absent. */
  defaultInFlight?: number;
}
