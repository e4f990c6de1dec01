import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { describeError, isAbortError } from '../errors.js';
import type { OutboundEvent, Sink } from '../sinks/sink.js';
import { SinkBackoffError, SinkPartialFailureError, SinkRejectedError, SinkUnavailableError } from '../sinks/sinkErrors.js';
import type { ChangefeedStore } from '../store/changefeedStore.js';
import type { PendingDelivery } from '../store/outbox.js';
import { orderingKeyOf, planBatches } from './batchPlanner.js';
import type { RetryConfig } from './deliveryConfig.js';
import { isExhausted, retryDelayMs } from './retryPolicy.js';

export interface SinkWorkerOptions {
  sink: Sink;
  store: ChangefeedStore;
  clock: Clock;
  logger: Logger;
  retry: RetryConfig;
  batchSize: number;
  maxInFlight: number;
  random?: () => number;
  /** Called after each batch outcome, for metrics. */
  onOutcome?: (outcome: BatchOutcome) => void;
}

export interface BatchOutcome {
  sink: string;
  delivered: number;
  retried: number;
  dead: number;
  /** Age of each delivered event: now minus its ingestion time. */
  latenciesMs: number[];
  error?: string;
}

/** Wait until one of the in-flight writes settles (or a notify), instead of for a time. */
const IN_FLIGHT = 'in-flight' as const;
/** With nothing due, look again after this long even without a notify (events from a replay, say). */
const IDLE_WAIT_MS = 5_000;
const SCAN_PAGE = 500;
const SCAN_LIMIT = 20_000;
const RECONNECT_INITIAL_MS = 500;
const RECONNECT_MAX_MS = 60_000;

/**
 * Delivers one sink's pending events: connects, plans batches that keep each object's events in
 * order, writes them with up to `maxInFlight` in flight, and records every outcome in the store.
 * A failing sink only ever waits on itself: each sink has its own worker.
 */
export class SinkWorker {
  private readonly inFlightKeys = new Set<string>();
  private readonly inFlight = new Set<Promise<void>>();
  private connected = false;
  private pausedUntil = 0;
  private connectFailures = 0;
  private consecutiveFailures = 0;
  private lastError: string | null = null;
  private lastErrorAt: number | null = null;
  private lastDeliveryAt: number | null = null;
  private wake: AbortController | undefined;

  constructor(private readonly options: SinkWorkerOptions) {}

  get name(): string {
    return this.options.sink.name;
  }

  /** True when connected, or still inside its reconnect backoff (for readiness). */
  get isConnected(): boolean {
    return this.connected;
  }

  /** Wakes the worker: new events were ingested. */
  notify(): void {
    this.wake?.abort();
  }

  /** Runs until `signal` aborts, then waits for in-flight writes. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) await this.pause(await this.step(signal), signal);
    await Promise.allSettled(this.inFlight);
  }

  /**
   * Delivers until nothing is pending or `deadline` passes (for `run --once`). Returns true when
   * the sink's outbox is empty.
   */
  async drain(signal: AbortSignal, deadline: number): Promise<boolean> {
    while (!signal.aborted && this.options.clock.now() < deadline) {
      if (this.inFlight.size === 0 && this.options.store.outbox.counts(this.name).pending === 0) return true;
      const wait = await this.step(signal);
      await this.pause(wait === IN_FLIGHT ? wait : Math.min(wait, Math.max(0, deadline - this.options.clock.now())), signal);
    }
    await Promise.allSettled(this.inFlight);
    return this.options.store.outbox.counts(this.name).pending === 0;
  }

  /** Waits `wait` ms, or until an in-flight write settles, whichever was asked; `notify` cuts either short. */
  private async pause(wait: number | typeof IN_FLIGHT, signal: AbortSignal): Promise<void> {
    if (wait === 0) return;
    this.wake = new AbortController();
    const woken = AbortSignal.any([signal, this.wake.signal]);
    if (wait === IN_FLIGHT) {
      const aborted = new Promise<void>((resolve) => woken.addEventListener('abort', () => resolve(), { once: true }));
      await Promise.race([...this.inFlight, aborted]);
      return;
    }
    try {
      await this.options.clock.sleep(wait, woken);
    } catch (error) {
      if (!isAbortError(error)) throw error;
    }
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.inFlight);
    await this.options.sink.close();
    this.connected = false;
    this.persistState();
  }

  /** One round: connect if needed, launch what can go. Returns how long to wait before the next round. */
  private async step(signal: AbortSignal): Promise<number | typeof IN_FLIGHT> {
    const { clock, sink } = this.options;
    const now = clock.now();
    if (this.pausedUntil > now) return this.pausedUntil - now;
    if (!this.connected) {
      try {
        await sink.connect(signal);
        this.connected = true;
        this.connectFailures = 0;
        this.persistState();
      } catch (error) {
        if (signal.aborted) return 0;
        this.connectFailures++;
        const delay = Math.min(RECONNECT_MAX_MS, RECONNECT_INITIAL_MS * 2 ** (this.connectFailures - 1));
        this.recordSinkError(error, delay);
        return delay;
      }
    }
    const free = this.options.maxInFlight - this.inFlight.size;
    if (free <= 0) return IN_FLIGHT;
    const plan = planBatches({
      pages: this.scanPending(),
      now,
      inFlightKeys: this.inFlightKeys,
      maxBatches: free,
      maxBatchSize: this.options.batchSize,
    });
    for (const batch of plan.batches) this.launch(batch, signal);
    if (plan.batches.length > 0) return this.inFlight.size >= this.options.maxInFlight ? IN_FLIGHT : 0;
    if (this.inFlight.size > 0) return IN_FLIGHT;
    return plan.nextDueAt === undefined ? IDLE_WAIT_MS : Math.max(1, plan.nextDueAt - now);
  }

  private *scanPending(): Generator<PendingDelivery> {
    let after = 0;
    for (let scanned = 0; scanned < SCAN_LIMIT; ) {
      const page = this.options.store.outbox.pending(this.name, after, SCAN_PAGE);
      for (const d of page) yield d;
      scanned += page.length;
      if (page.length < SCAN_PAGE) return;
      after = page[page.length - 1]?.seq ?? after;
    }
  }

  private launch(batch: PendingDelivery[], signal: AbortSignal): void {
    const keys = new Set(batch.map(orderingKeyOf));
    for (const k of keys) this.inFlightKeys.add(k);
    const task = this.deliver(batch, signal).finally(() => {
      for (const k of keys) this.inFlightKeys.delete(k);
      this.inFlight.delete(task);
      this.notify();
    });
    this.inFlight.add(task);
  }

  private async deliver(batch: PendingDelivery[], signal: AbortSignal): Promise<void> {
    const { sink, store, clock } = this.options;
    const events: OutboundEvent[] = batch.map((d) => ({
      seq: d.seq,
      id: d.eventId,
      type: d.type,
      log: d.log,
      objectId: d.objectId,
      orderingKey: orderingKeyOf(d),
      json: d.payload,
      attempt: d.attempts + 1,
    }));
    try {
      await sink.write(events, signal);
      const now = clock.now();
      store.outbox.markDelivered(this.name, batch.map((d) => d.seq), now);
      this.succeeded(now);
      this.report({ delivered: batch.length, latenciesMs: batch.map((d) => now - d.ingestedAt) });
    } catch (error) {
      if (signal.aborted && isAbortError(error)) return;
      this.handleFailure(batch, error);
    }
  }

  private handleFailure(batch: PendingDelivery[], error: unknown): void {
    const { store, clock, retry } = this.options;
    const now = clock.now();
    const message = describeError(error);
    if (error instanceof SinkUnavailableError) {
      // The connection, not the events, failed: reconnect; the events keep their attempt count.
      this.connected = false;
      this.connectFailures++;
      this.recordSinkError(error, Math.min(RECONNECT_MAX_MS, RECONNECT_INITIAL_MS * 2 ** (this.connectFailures - 1)));
      this.report({ retried: batch.length, error: message });
      return;
    }
    if (error instanceof SinkBackoffError) {
      this.recordSinkError(error, error.retryAfterMs);
      this.report({ retried: batch.length, error: message });
      return;
    }
    const delivered: number[] = [];
    const retries: { seq: number; nextAttemptAt: number; error: string }[] = [];
    const dead: { seq: number; error: string }[] = [];
    const failedKeys = new Set<string>();
    for (const d of batch) {
      const key = orderingKeyOf(d);
      const failure =
        error instanceof SinkPartialFailureError
          ? error.failures.get(d.eventId)
          : { error: message, permanent: error instanceof SinkRejectedError };
      if (!failure) {
        // Written, but behind a failed event of the same object: it is sent again after that one,
        // so the destination's last copy of each event still arrives in order.
        if (!failedKeys.has(key)) delivered.push(d.seq);
        continue;
      }
      failedKeys.add(key);
      const attempts = d.attempts + 1;
      if (failure.permanent || isExhausted(attempts, d.firstAttemptAt ?? now, now, retry)) {
        dead.push({ seq: d.seq, error: failure.permanent ? `rejected: ${failure.error}` : `gave up after ${attempts} attempts: ${failure.error}` });
      } else {
        retries.push({ seq: d.seq, nextAttemptAt: now + retryDelayMs(attempts, retry, failure.retryAfterMs, this.options.random), error: failure.error });
      }
    }
    store.outbox.markDelivered(this.name, delivered, now);
    store.outbox.scheduleRetry(this.name, retries, now);
    store.outbox.markDead(this.name, dead, now);
    this.consecutiveFailures++;
    this.lastError = message;
    this.lastErrorAt = now;
    this.persistState();
    if (dead.length > 0) this.options.logger.error({ sink: this.name, dead: dead.length, err: message }, 'events moved to dead letters');
    else this.options.logger.warn({ sink: this.name, retried: retries.length, err: message }, 'delivery failed; retrying with backoff');
    this.report({ delivered: delivered.length, retried: batch.length - delivered.length - dead.length, dead: dead.length, error: message });
  }

  private succeeded(now: number): void {
    const persistedLongAgo = this.lastDeliveryAt === null || now - this.lastDeliveryAt >= 1000;
    this.lastDeliveryAt = now;
    if (this.consecutiveFailures !== 0 || this.lastError !== null || persistedLongAgo) {
      this.consecutiveFailures = 0;
      this.lastError = null;
      this.persistState();
    }
  }

  private recordSinkError(error: unknown, pauseMs: number): void {
    const now = this.options.clock.now();
    this.pausedUntil = now + pauseMs;
    this.consecutiveFailures++;
    this.lastError = describeError(error);
    this.lastErrorAt = now;
    this.persistState();
    this.options.logger.warn({ sink: this.name, retryInMs: pauseMs, err: this.lastError }, 'sink unavailable; backing off');
  }

  private persistState(): void {
    this.options.store.sinks.recordState({
      sink: this.name,
      connected: this.connected,
      pausedUntil: this.pausedUntil,
      consecutiveFailures: this.consecutiveFailures,
      lastError: this.lastError,
      lastErrorAt: this.lastErrorAt,
      lastDeliveryAt: this.lastDeliveryAt,
    });
  }

  private report(partial: Partial<Omit<BatchOutcome, 'sink'>>): void {
    this.options.onOutcome?.({ sink: this.name, delivered: 0, retried: 0, dead: 0, latenciesMs: [], ...partial });
  }
}
