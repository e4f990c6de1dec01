import type { Logger } from 'pino';
import { backoffDelayMs, type BackoffPolicy } from '../backoff.js';
import type { Clock } from '../clock.js';
import { describeError } from '../errors.js';
import type { ChangefeedStore } from '../store/changefeedStore.js';
import type { CircuitBreakerConfig } from '../sinkContract/deliveryConfig.js';
import { CircuitBreaker } from './circuitBreaker.js';
import type { EndpointStart } from './endpointBackoff.js';

/** Reconnecting a sink: ceilings from 500 ms to a minute, never sooner than 100 ms. */
const RECONNECT_BACKOFF: BackoffPolicy = { initialMs: 500, maxMs: 60_000, minMs: 100 };

/**
 * A sink's connection and failure state as `changefeed status` and readiness see it, kept in the
 * store: connected or not, paused until when, the circuit, the last error, disabled or not. It
 * owns the circuit breaker: every change of the circuit comes with the state change it records.
 */
export class SinkHealth {
  connected = false;
  disabled = false;
  pausedUntil = 0;
  /** When the sink last went from connected (or created) to not connected; null while connected. */
  disconnectedSince: number | null;
  /** Since when the destination has failed as a whole (endpoint-level), with no delivery since; else null. */
  failingSince: number | null = null;
  private connectFailures = 0;
  private consecutiveFailures = 0;
  readonly circuit: CircuitBreaker;
  /** The last error, as readiness reports it. */
  lastError: string | null = null;
  private lastErrorAt: number | null = null;
  private lastDeliveryAt: number | null = null;
  private disabledReason: string | null = null;
  /** State writes, one at a time and in order: the last one recorded is the newest state. */
  private persisting: Promise<void> = Promise.resolve();
  /**
   * The disabled reason the store held when this worker last read or wrote it (null: enabled);
   * undefined until the recorded state was taken up, and nothing is written before then. Every
   * write is guarded by it, so an enable this worker has not seen yet is never undone.
   */
  private storedDisabledReason: string | null | undefined;

  constructor(
    private readonly sink: string,
    private readonly store: ChangefeedStore,
    private readonly clock: Clock,
    private readonly logger: Logger,
    circuitBreaker: CircuitBreakerConfig,
  ) {
    this.circuit = new CircuitBreaker(circuitBreaker);
    this.disconnectedSince = clock.now();
  }

  markConnected(): void {
    this.connected = true;
    this.disconnectedSince = null;
    this.connectFailures = 0;
    this.persist();
  }

  markDisconnected(): void {
    this.connected = false;
    this.disconnectedSince ??= this.clock.now();
    this.persist();
  }

  /** Connecting failed, or (`lost`) a write found the connection gone: reconnect after a backoff; returns it, ms. */
  connectFailed(error: unknown, lost = false): number {
    this.connected = false;
    this.disconnectedSince ??= this.clock.now();
    this.connectFailures++;
    const delay = backoffDelayMs(this.connectFailures, RECONNECT_BACKOFF);
    this.backOff(error, delay, `sink ${lost ? 'connection lost' : 'unavailable'}; reconnecting with backoff`);
    return delay;
  }

  /**
   * The destination failed as a whole: the sink pauses until `until` with its circuit open, its
   * events pending. `status` shows it not connected, with the reason, until a delivery gets through.
   */
  endpointFailing(message: string, failingSince: number, until: number): void {
    const now = this.clock.now();
    this.failingSince = failingSince;
    this.pausedUntil = until;
    this.circuit.holdOpenUntil(until);
    this.consecutiveFailures++;
    this.lastError = message;
    this.lastErrorAt = now;
    this.persist();
    this.logger.warn(
      {
        sink: this.sink,
        err: message,
        failingSince: new Date(failingSince).toISOString(),
        retryAt: new Date(until).toISOString(),
      },
      'endpoint failing: its events stay pending, in order; one probe at retryAt',
    );
  }

  disable(reason: string): void {
    this.disabled = true;
    this.disabledReason = reason;
    this.lastError = reason;
    this.lastErrorAt = this.clock.now();
    this.persist();
    this.logger.error(
      { sink: this.sink, err: reason },
      `sink disabled; its events stay pending until it is enabled again: fix the destination, then changefeed sinks enable ${this.sink}`,
    );
  }

  /** Takes up what an earlier run recorded (EndpointStart). */
  resume(start: EndpointStart): void {
    this.readFromStore(start.kind === 'disabled' ? start.reason : null);
    if (start.kind === 'disabled') {
      this.disabled = true;
      this.disabledReason = start.reason;
      this.lastError = start.reason;
      this.logger.warn(
        { sink: this.sink, err: start.reason },
        `sink disabled by an earlier run; its events stay pending: fix the destination, then changefeed sinks enable ${this.sink}`,
      );
    } else if (start.kind === 'resume') {
      this.failingSince = start.run.failingSince ?? this.clock.now();
      this.circuit.holdOpenUntil(this.clock.now());
      this.logger.warn(
        { sink: this.sink, failingSince: new Date(this.failingSince).toISOString() },
        'endpoint failing since an earlier run: one probe now; the give-up clock runs on from failingSince',
      );
    }
  }

  /** `changefeed sinks enable` cleared the disabled state in the store: deliver again, from a clean slate. */
  enabled(): void {
    this.readFromStore(null);
    this.disabled = false;
    this.disabledReason = null;
    this.failingSince = null;
    this.consecutiveFailures = 0;
    this.circuit.recordSuccess();
    this.pausedUntil = 0;
    this.persist();
    this.logger.info({ sink: this.sink }, 'sink enabled again: delivering its pending events');
  }

  /** The endpoint takes connections again and nothing waits to be delivered: its failure run is over. */
  recovered(now: number): void {
    this.failingSince = null;
    this.consecutiveFailures = 0;
    this.lastError = null;
    this.circuit.recordSuccess();
    this.pausedUntil = Math.min(this.pausedUntil, now);
    this.persist();
    this.logger.info({ sink: this.sink }, 'endpoint reachable again, with nothing pending: no longer failing');
  }

  /**
   * A batch was acknowledged. Its ack recorded the time of the last delivery already
   * (OutboxStore.markDelivered): the state is written only when something else changed with it.
   */
  delivered(now: number): void {
    this.lastDeliveryAt = now;
    const wasFailing = this.failingSince !== null;
    const circuitWasClosed = this.circuit.state(now) === 'closed';
    this.failingSince = null;
    this.circuit.recordSuccess();
    if (wasFailing || this.consecutiveFailures !== 0 || this.lastError !== null || !circuitWasClosed) {
      this.consecutiveFailures = 0;
      this.lastError = null;
      this.persist();
    }
  }

  /**
   * A write failed for its events. `perEventRejections`: the destination answered and refused
   * these events (a 4xx), so it works: that is no outage, and counting it would pause the sink and
   * let one event die per probe.
   */
  writeFailed(message: string, detail: { perEventRejections: boolean; dead: number; retried: number }): void {
    const now = this.clock.now();
    this.consecutiveFailures++;
    this.lastError = message;
    this.lastErrorAt = now;
    const opened = detail.perEventRejections ? (this.circuit.recordSuccess(), false) : this.circuit.recordFailure(now);
    if (opened) this.pausedUntil = this.circuit.reopensAt;
    this.persist();
    const context = { sink: this.sink, err: message, consecutiveFailures: this.consecutiveFailures };
    if (detail.dead > 0) this.logger.error({ ...context, dead: detail.dead }, 'events moved to dead letters');
    else this.logger.warn({ ...context, retried: detail.retried }, 'delivery failed; retrying with backoff');
    if (opened)
      this.logger.warn(
        { sink: this.sink, until: new Date(this.circuit.reopensAt).toISOString() },
        'circuit opened: sink paused, then one probe',
      );
  }

  /** Nothing is sent for `ms`: the sink asked for it (SinkBackoffError), or it reconnects. */
  backOff(error: unknown, ms: number, message = 'sink asked to back off'): void {
    const now = this.clock.now();
    this.pausedUntil = now + ms;
    this.consecutiveFailures++;
    this.lastError = describeError(error);
    this.lastErrorAt = now;
    this.persist();
    this.logger.warn({ sink: this.sink, retryInMs: ms, err: this.lastError }, message);
  }

  /** Resolves once every state write so far was recorded (or failed). */
  async persisted(): Promise<void> {
    await this.persisting;
  }

  /**
   * Records the state for `status` without holding up delivery. A store that cannot be written
   * only makes `status` stale; the worker notices the outage on its own writes and pauses.
   */
  private persist(): void {
    const state = {
      sink: this.sink,
      // Reachable is not enough: an endpoint answering 401 to everything is not connected in any useful sense.
      connected: this.connected && this.failingSince === null,
      pausedUntil: this.pausedUntil,
      consecutiveFailures: this.consecutiveFailures,
      lastError: this.lastError,
      lastErrorAt: this.lastErrorAt,
      lastDeliveryAt: this.lastDeliveryAt,
      circuit: this.circuit.state(this.clock.now()),
      disabledReason: this.disabledReason,
      failingSince: this.failingSince,
    };
    this.persisting = this.persisting
      .then(async () => {
        const guard = this.storedDisabledReason;
        if (guard === undefined) return;
        if (await this.store.sinks.recordState(state, { disabledReason: guard }))
          this.storedDisabledReason = state.disabledReason;
        else
          this.logger.info(
            { sink: this.sink },
            'sink state not recorded: its disabled state changed in the store since this worker read it (changefeed sinks enable)',
          );
      })
      .catch((error: unknown) =>
        this.logger.debug({ sink: this.sink, err: describeError(error) }, 'sink state not recorded'),
      );
  }

  /** What the store was read holding, taken in turn with the writes queued before it. */
  private readFromStore(disabledReason: string | null): void {
    this.persisting = this.persisting.then(() => {
      this.storedDisabledReason = disabledReason;
    });
  }
}
