import { getMaxListeners, setMaxListeners } from 'node:events';
import type { Logger } from 'pino';
import { backoffDelayMs, type BackoffPolicy } from '../backoff.js';
import { timerDelayMs, type Clock } from '../clock.js';
import { describeError, errorCodeOf } from '../errors.js';
import { WakeableSleep } from '../poll/wakeableSleep.js';
import {
  SinkBackoffError,
  SinkDisabledError,
  SinkEndpointFailingError,
  SinkUnavailableError,
} from '../sinkContract/sinkErrors.js';
import { decideEndpointFailure, decideEndpointStart, NO_FAILURES, type EndpointFailureRun } from './endpointBackoff.js';
import type { Sink } from '../sinkContract/sink.js';
import type { SinkDeliveryConfig, SinkFilter } from '../sinkContract/deliveryConfig.js';
import type { ChangefeedStore } from '../store/changefeedStore.js';
import type { CircuitState, PendingDelivery, SinkStateRow } from '../store/storeRecords.js';
import { classifyBatchFailure, recordBatchFailure } from './batchFailure.js';
import { poisonBatchCap } from './poisonSearch.js';
import { logKey } from '../logs.js';
import { planBatches, toOutboundEvents } from './batchPlanner.js';
import { PendingWindow } from './pendingWindow.js';
import { compileSinkFilter } from './sinkFilter.js';
import { SinkHealth } from './sinkHealth.js';
import { isStoreBusy, STORE_RETRY_MS } from '../store/storeHealth.js';

/**
 * With nothing due, look again after this long even without a notify: a backstop only. An ingest
 * of this process notifies the worker, and what another process queues (`replay --queue-only`,
 * `dead-letters retry`) reaches it through the engine's RequeueWatch: a frequent read per sink
 * would be a large share of the store's transactions (docs/scaling.md).
 */
const IDLE_WAIT_MS = 600_000;
/** Pauses of the worker after errors nobody expected: 1 s doubling to a minute. */
const UNEXPECTED_BACKOFF: BackoffPolicy = { initialMs: 1_000, maxMs: 60_000, minMs: 1_000 };
/** Wait until one of the in-flight writes settles (or a notify), instead of for a time. */
export const IN_FLIGHT = 'in-flight' as const;
/** How often a disabled sink's worker looks whether `changefeed sinks enable` cleared it. */
const ENABLE_CHECK_MS = 5_000;
/** Pending deliveries held in memory per sink for planning. */
const WINDOW_CAPACITY = 20_000;
/** Batches planned ahead per scan, as a multiple of maxInFlight: a scan per completed write would dominate. */
const PLAN_AHEAD = 4;

/** A sink with its `delivery` and `filter` blocks as configured (sinkCommonSchema). */
export interface EngineSink {
  sink: Sink;
  delivery: SinkDeliveryConfig;
  filter?: SinkFilter | undefined;
}

/** What a sink worker is given by the delivery engine: its sink and settings, the store, and the engine's hooks. */
export interface SinkWorkerOptions extends EngineSink {
  store: ChangefeedStore;
  clock: Clock;
  logger: Logger;
  random?: () => number;
  /** Called after each batch outcome, for metrics. */
  onOutcome?: (outcome: BatchOutcome) => void;
  /** The lease fence refused a write (LEASE_LOST): the worker has stopped; the tenant's runtime stops. */
  onLeaseLost?: (error: unknown) => void;
  /**
   * On a shared store: the lease's local check (no round trip), called right before each write to
   * the sink; it throws LEASE_LOST, `refused` in its message, once the lease is past its local
   * deadline or given up (LeaseKeeper.requestGuard).
   */
  leaseGuard?: (refused: string) => void;
}

/** A sink's connection as its worker holds it. */
export interface SinkConnectionState {
  sink: string;
  disabled: boolean;
  /** The circuit breaker's state now (an open circuit whose cool-down is over reads half-open). */
  circuit: CircuitState;
  /** When the sink last lost (or never had) its connection; null while connected. */
  disconnectedSince: number | null;
  /** Since when the destination has failed as a whole (401, 5xx, timeouts...) with no delivery since; else null. */
  failingSince: number | null;
  lastError: string | null;
}

/** What one batch came to, reported to `onOutcome` for metrics. */
export interface BatchOutcome {
  sink: string;
  delivered: number;
  retried: number;
  dead: number;
  /** Age of each delivered event: now minus its ingestion time. */
  latenciesMs: number[];
  error?: string;
}

/**
 * Delivers one sink's pending events: connects, plans batches that keep each object's events in
 * order, writes them with up to `maxInFlight` in flight, records every outcome in the store, and
 * pauses the sink (circuit breaker, backoff, reconnect) when the destination keeps failing.
 *
 * Every error of the worker takes one route, `failed` (see there). A batch the destination took
 * is acknowledged outside the write's `try`, so a refused acknowledgement is never taken for a
 * failed write, and never a reason to write the batch again.
 */
export class SinkWorker {
  private readonly inFlightKeys = new Set<string>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly health: SinkHealth;
  private readonly window: PendingWindow;
  /** Planned batches not yet launched: independent of each other and of what is in flight. */
  private ready: PendingDelivery[][] = [];
  /** The sink lost its connection since it last connected: close it before connecting again. */
  private reconnecting = false;
  /** Batches the destination took that the store could not mark delivered: recorded first once it can. */
  private readonly unacknowledged: PendingDelivery[][] = [];
  /** When the destination last took a batch: the poison search needs others to get through. */
  private lastSuccessAt: number | null = null;
  /** Deliveries the last top-up settled as filtered: something changed, so look again at once. */
  private filteredInLastScan = 0;
  private readonly wake: WorkerWake;
  /** Nothing is launched before this time: the store refused, or an error nobody expected. */
  private pausedUntil = 0;
  /** Errors nobody expected in a row since the last acknowledged batch: each pause is longer. */
  private unexpectedInARow = 0;
  /** The lease fence refused a write: this worker launches nothing more. */
  private leaseLost = false;
  /** The destination's run of endpoint-level failures, ended by the next delivery. */
  private endpointRun: EndpointFailureRun = NO_FAILURES;
  /** The state an earlier run recorded (disabled, a failure run) was taken up. */
  private resumed = false;

  /** Most events per write and writes in flight: as configured, capped to what the sink takes. */
  private readonly batchSize: number;
  private readonly maxInFlight: number;

  constructor(private readonly options: SinkWorkerOptions) {
    const { sink, delivery, store, clock, logger } = options;
    this.batchSize = Math.min(delivery.batchSize ?? sink.limits.maxBatchSize, sink.limits.maxBatchSize);
    this.maxInFlight = Math.min(
      delivery.maxInFlight ?? sink.limits.defaultInFlight ?? sink.limits.maxInFlight,
      sink.limits.maxInFlight,
    );
    this.wake = new WorkerWake(clock);
    this.health = new SinkHealth(sink.name, store, clock, logger, delivery.circuitBreaker);
    const accepts = compileSinkFilter(options.filter, (note) => logger.warn({ sink: sink.name }, note));
    this.window = new PendingWindow(store.outbox, sink.name, WINDOW_CAPACITY, accepts, (seqs) =>
      store.outbox.markFiltered(sink.name, seqs, clock.now()),
    );
  }

  get name(): string {
    return this.options.sink.name;
  }

  /** For readiness and metrics. */
  get connectionState(): SinkConnectionState {
    return {
      sink: this.name,
      disabled: this.health.disabled,
      circuit: this.health.circuit.state(this.options.clock.now()),
      disconnectedSince: this.health.disconnectedSince,
      failingSince: this.health.failingSince,
      lastError: this.health.lastError,
    };
  }

  /** Dead letters were re-queued: read the outbox afresh (planning still skips objects in flight). */
  reloadPending(): void {
    this.window.reload();
    this.ready = [];
    this.notify();
  }

  /** Wakes the worker: new events were ingested. */
  notify(): void {
    this.wake.notify();
  }

  /**
   * Launches batches until `stop` aborts or the lease is lost, then waits for the writes in flight
   * (a drain: their acks still commit). `abortWrites` (default: `stop`) aborts those writes. With a
   * `deadline` (`run --once`) it also ends once nothing is pending, and at the deadline aborts the
   * writes still in flight: their events stay pending.
   */
  async run(stop: AbortSignal, mode: { abortWrites?: AbortSignal; deadline?: number } = {}): Promise<void> {
    const { clock } = this.options;
    const deadline = mode.deadline ?? Infinity;
    // `run --once` cuts the writes still in flight at its deadline; the daemon's worker runs
    // without one and hands the engine's own signals on as they are: a signal combined per worker
    // costs its tenant about 750 bytes of heap for as long as it runs (docs/scaling.md).
    const cutOff = mode.deadline === undefined ? undefined : new AbortController();
    const abortWrites = mode.abortWrites ?? stop;
    const writes = cutOff === undefined ? abortWrites : AbortSignal.any([abortWrites, cutOff.signal]);
    // Every write in flight adds a listener to `writes`, which the engine's other workers may
    // share: up to maxInFlight more per worker is the design, not the leak Node warns about past ten.
    const listeners = this.maxInFlight + 2;
    setMaxListeners(getMaxListeners(writes) + listeners, writes);
    // And `stop` gets this worker's wake: the engine's workers share it, one listener each.
    const stopListeners = stop === writes ? 0 : 1;
    setMaxListeners(getMaxListeners(stop) + stopListeners, stop);
    const stopped = (): boolean => stop.aborted || writes.aborted;
    const wakeOnStop = (): void => this.wake.notify();
    stop.addEventListener('abort', wakeOnStop, { once: true });
    writes.addEventListener('abort', wakeOnStop, { once: true });
    // A write that hangs must not hold the run past its deadline. A real timer, not the clock:
    // a clock sleeper would let virtual time in tests jump to the deadline during every write.
    const timer =
      cutOff === undefined ? undefined : setTimeout(() => cutOff.abort(), timerDelayMs(deadline - clock.now()));
    try {
      while (!stopped() && !this.leaseLost && clock.now() < deadline) {
        // `run --once` ends at a disabled sink; the daemon's worker waits for `sinks enable`.
        if (this.health.disabled && mode.deadline !== undefined) break;
        let wait: number | typeof IN_FLIGHT;
        try {
          const idle = mode.deadline !== undefined && this.inFlight.size === 0;
          if (idle && (await this.options.store.outbox.counts(this.name)).pending === 0) break;
          wait = this.health.disabled ? await this.checkEnabled() : await this.step(writes);
        } catch (error) {
          wait = this.failed(error);
        }
        if (wait !== IN_FLIGHT) wait = Math.min(wait, Math.max(0, deadline - clock.now()));
        if (stopped()) break;
        await this.wake.pause(wait);
      }
    } finally {
      clearTimeout(timer);
      cutOff?.abort();
      await Promise.allSettled(this.inFlight);
      stop.removeEventListener('abort', wakeOnStop);
      writes.removeEventListener('abort', wakeOnStop);
      setMaxListeners(Math.max(0, getMaxListeners(writes) - listeners), writes);
      setMaxListeners(Math.max(0, getMaxListeners(stop) - stopListeners), stop);
    }
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.inFlight);
    await this.options.sink.close();
    this.health.markDisconnected();
    await this.health.persisted();
  }

  /** One round: connect if needed, launch what may go. Returns how long to wait before the next round. */
  private async step(signal: AbortSignal): Promise<number | typeof IN_FLIGHT> {
    const { clock, sink } = this.options;
    const now = clock.now();
    this.wake.reading();
    if (this.pausedUntil > now) return this.pausedUntil - now;
    if (!this.resumed) {
      this.resume(await this.options.store.sinks.list(), now);
      if (this.health.disabled) return 0;
    }
    await this.acknowledgeHeld(now);
    if (this.health.pausedUntil > now) return this.health.pausedUntil - now;
    if (!this.health.connected) {
      try {
        // After a lost connection, release what is left of it before connecting afresh.
        if (this.reconnecting) await sink.close();
        await sink.connect(signal);
        this.reconnecting = false;
        this.health.markConnected();
      } catch (error) {
        if (signal.aborted) return 0;
        if (!(error instanceof SinkEndpointFailingError)) return this.health.connectFailed(error);
        // An endpoint that cannot be reached fails as a whole: one run and one give-up rule with its answers.
        this.endpointFailed(error, clock.now());
        return this.health.disabled ? 0 : Math.max(1, this.health.pausedUntil - clock.now());
      }
      if (this.endpointRun.failingSince !== null) await this.connectedWhileFailing(clock.now());
    }
    const allowance = this.health.circuit.allowance(now, this.maxInFlight);
    if (allowance === 0) return Math.max(1, this.health.circuit.reopensAt - now);
    const free = allowance - this.inFlight.size;
    if (free <= 0) return IN_FLIGHT;
    let nextDueAt: number | undefined;
    if (this.ready.length === 0) {
      this.filteredInLastScan = await this.window.topUp();
      const plan = planBatches({
        pages: this.window.candidates(this.batchSize),
        now,
        inFlightKeys: this.inFlightKeys,
        maxBatches: Math.max(free, this.maxInFlight * PLAN_AHEAD),
        maxBatchSize: this.batchSize,
        batchCap: (d) => poisonBatchCap(d.attempts, this.options.delivery.poison.strikes, this.batchSize),
      });
      this.ready = plan.batches;
      nextDueAt = plan.nextDueAt;
    }
    for (const batch of this.ready.splice(0, free)) this.launch(batch, signal);
    if (this.inFlight.size > 0) return this.ready.length > 0 && this.inFlight.size < allowance ? 0 : IN_FLIGHT;
    if (this.filteredInLastScan > 0) return 0;
    return nextDueAt === undefined ? IDLE_WAIT_MS : Math.max(1, nextDueAt - now);
  }

  /** Takes up what the store recorded for this sink (EndpointStart). */
  private resume(recorded: readonly SinkStateRow[], now: number): void {
    const start = decideEndpointStart(
      recorded.find((s) => s.name === this.name),
      now,
    );
    this.resumed = true;
    this.health.resume(start);
    if (start.kind === 'resume') this.endpointRun = start.run;
  }

  /**
   * A connection taken while the endpoint's failure run is open ends the run only when nothing
   * waits to be delivered: else the next write is the probe that decides (a receiver may accept
   * connections and answer 503), and with nothing pending the sink would show failing for good.
   */
  private async connectedWhileFailing(now: number): Promise<void> {
    if ((await this.options.store.outbox.counts(this.name)).pending > 0) return;
    this.endpointRun = NO_FAILURES;
    this.health.recovered(now);
  }

  /** A disabled sink: delivers again once `changefeed sinks enable` cleared it in the store. */
  private async checkEnabled(): Promise<number> {
    const recorded = (await this.options.store.sinks.list()).find((s) => s.name === this.name);
    if (recorded === undefined || recorded.disabledReason !== null) return ENABLE_CHECK_MS;
    this.endpointRun = NO_FAILURES;
    this.health.enabled();
    return 0;
  }

  /** Starts a batch; its errors end at `failed`, so a task in flight never rejects. */
  private launch(batch: PendingDelivery[], signal: AbortSignal): void {
    const keys = new Set(batch.map(logKey));
    for (const k of keys) this.inFlightKeys.add(k);
    const task = this.deliver(batch, signal)
      .catch((error: unknown) => {
        this.failed(error);
      })
      .finally(() => {
        for (const k of keys) this.inFlightKeys.delete(k);
        this.inFlight.delete(task);
        this.notify();
      });
    this.inFlight.add(task);
  }

  /** Reads the batch, writes it, and acknowledges it (or records why the write failed). */
  private async deliver(batch: PendingDelivery[], signal: AbortSignal): Promise<void> {
    const { store, sink } = this.options;
    try {
      const events = toOutboundEvents(batch, await this.payloadsOf(batch), store.tenant);
      // A replica resumed after a pause runs this worker's due retry before the timer that drops
      // its lost leases: the new holder sends these events, this one must not (LEASE_LOST stops it).
      this.options.leaseGuard?.(`the batch of ${batch.length} events was not written to sink "${sink.name}"`);
      try {
        await sink.write(events, signal);
      } catch (error) {
        // Shutting down or past a drain's deadline: the events simply stay pending.
        if (!signal.aborted) await this.handleFailure(batch, error);
        return;
      }
    } catch (error) {
      // The store cannot be read, or the outcome not recorded: the batch stays pending and is
      // planned again after the pause.
      this.window.settle(batch);
      this.window.reload();
      throw error;
    }
    await this.acknowledge(batch, this.options.clock.now());
  }

  /** The batch's payloads: those its rows carry (PendingWindow reads a caught-up sink's with them), else read. */
  private async payloadsOf(batch: readonly PendingDelivery[]): Promise<Map<number, string>> {
    const carried = new Map<number, string>();
    for (const d of batch) if (d.payload !== undefined) carried.set(d.seq, d.payload);
    if (carried.size === batch.length) return carried;
    return this.options.store.outbox.payloads(batch.map((d) => d.seq));
  }

  /**
   * Marks a batch the destination took as delivered. Refused by the lease fence: the batch stays
   * pending for the new holder to send (at least once, same event ids), and this worker stops.
   * Refused otherwise: held and recorded before anything else once the store takes it.
   */
  private async acknowledge(batch: PendingDelivery[], now: number): Promise<void> {
    try {
      await this.markDelivered(batch, now);
    } catch (error) {
      // Held, it is not planned again meanwhile (nor once the worker stops).
      if (errorCodeOf(error) !== 'LEASE_LOST') this.unacknowledged.push(batch);
      throw error;
    } finally {
      this.window.settle(batch);
    }
    this.unexpectedInARow = 0;
    this.endpointRun = NO_FAILURES;
    this.health.delivered(now);
    this.lastSuccessAt = now;
    this.report({ delivered: batch.length, latenciesMs: batch.map((d) => now - d.ingestedAt) });
  }

  /** Records the batches held for want of a store, oldest first; throws while it still refuses. */
  private async acknowledgeHeld(now: number): Promise<void> {
    while (this.unacknowledged.length > 0) {
      const batch = this.unacknowledged[0] ?? [];
      await this.markDelivered(batch, now);
      this.unacknowledged.shift();
      this.window.settle(batch);
    }
  }

  /**
   * Records a batch as delivered. Its rows are settled in the window only once recorded: until
   * then they were still pending in the store, and a top-up from the start of the outbox (an
   * emptied window, a reload) may have loaded them again; settling drops those copies.
   */
  private async markDelivered(batch: PendingDelivery[], now: number): Promise<void> {
    await this.options.store.outbox.markDelivered(
      this.name,
      batch.map((d) => d.seq),
      now,
    );
    this.options.store.health.clear();
  }

  /**
   * The worker's one error route, for a round's (`step`) and a batch's (`deliver`) errors; returns
   * how long to wait. LEASE_LOST: the worker stops and tells the tenant's runtime, which stops
   * polling and delivery together. A store that refused (full, read-only, locked, away): delivery
   * pauses until a write succeeds. Anything else: logged once per run of such errors, growing pauses.
   */
  private failed(error: unknown): number {
    const { store, logger, clock } = this.options;
    const now = clock.now();
    if (errorCodeOf(error) === 'LEASE_LOST') {
      if (!this.leaseLost)
        logger.warn(
          { sink: this.name, err: describeError(error) },
          "the tenant's lease is lost (the store refused a write under it, or it is past its local deadline): this " +
            'replica stops the tenant; the new holder sends what is pending',
        );
      this.leaseLost = true;
      this.ready = [];
      this.options.onLeaseLost?.(error);
      return 0;
    }
    const first = store.health.problem === undefined && !isStoreBusy(error);
    if (store.health.record(error, store.location)) {
      // A full pool (STORE_BUSY) is waited out the same way, unlogged (its metric counts it).
      if (first)
        logger.warn(
          { sink: this.name, err: describeError(error) },
          'the store cannot be written: delivery pauses until it can',
        );
      this.pausedUntil = Math.max(this.pausedUntil, now + STORE_RETRY_MS);
      return STORE_RETRY_MS;
    }
    this.unexpectedInARow++;
    const wait = backoffDelayMs(this.unexpectedInARow, UNEXPECTED_BACKOFF, this.options.random);
    this.pausedUntil = Math.max(this.pausedUntil, now + wait);
    if (this.unexpectedInARow === 1)
      logger.error(
        { sink: this.name, err: describeError(error), pauseSeconds: Math.ceil(wait / 1000) },
        'delivery failed unexpectedly; the worker backs off until a batch is acknowledged',
      );
    return wait;
  }

  private async handleFailure(batch: PendingDelivery[], error: unknown): Promise<void> {
    const { store, clock } = this.options;
    const now = clock.now();
    const message = describeError(error);
    // Batches planned before this failure may hold events the failure should now hold back.
    this.ready = [];
    // The connection or the destination as a whole failed, not these events: they keep their
    // attempt count, and the worker disables, reconnects or backs off.
    let whole = true;
    if (error instanceof SinkEndpointFailingError) this.endpointFailed(error, now);
    else if (error instanceof SinkDisabledError) this.health.disable(message);
    else if (error instanceof SinkUnavailableError) {
      this.reconnecting = true;
      this.health.connectFailed(error, true);
    } else if (error instanceof SinkBackoffError) this.health.backOff(error, error.retryAfterMs);
    else whole = false;
    if (whole) return this.report({ retried: batch.length, error: message });
    const outcome = classifyBatchFailure(batch, error, now, this.options.delivery.retry, this.options.random, {
      strikes: this.options.delivery.poison.strikes,
      lastSuccessAt: this.lastSuccessAt,
    });
    await recordBatchFailure(store.outbox, this.window, this.name, batch, outcome, now);
    this.health.writeFailed(message, {
      perEventRejections: outcome.perEventRejections,
      dead: outcome.dead.length,
      retried: outcome.retries.length,
    });
    this.report({
      delivered: outcome.delivered.length,
      retried: batch.length - outcome.delivered.length - outcome.dead.length,
      dead: outcome.dead.length,
      error: message,
    });
  }

  /**
   * The destination failed as a whole: its events keep their attempts and their order, and the
   * endpoint pauses on its schedule or, past the give-up rule, is disabled. Writes launched before
   * the circuit opened that fail the same way do not advance the schedule.
   */
  private endpointFailed(error: SinkEndpointFailingError, now: number): void {
    if (this.health.circuit.state(now) === 'open') return;
    const decision = decideEndpointFailure(
      this.endpointRun,
      now,
      this.options.delivery.endpointBackoff,
      error.failure.retryAfterMs,
      this.options.random,
    );
    this.endpointRun = decision.run;
    if (decision.kind === 'disable') {
      this.health.disable(`${decision.reason}; last: ${error.message}`);
      return;
    }
    this.health.endpointFailing(error.message, decision.run.failingSince ?? now, decision.until);
  }

  private report(partial: Partial<Omit<BatchOutcome, 'sink'>>): void {
    this.options.onOutcome?.({ sink: this.name, delivered: 0, retried: 0, dead: 0, latenciesMs: [], ...partial });
  }
}

/**
 * How a sink worker waits between rounds: for a time, or for one of its writes in flight to
 * settle (each notifies as it does), either cut short by a notify (new events, a write settled, a
 * stop). A notify that comes while a round reads the store makes the next pause return at once
 * instead of being slept through. The timed wait keeps one controller until a notify uses it,
 * not two AbortSignals per pause held through every idle worker's wait.
 */
export class WorkerWake {
  private readonly sleep: WakeableSleep;
  private woken = false;
  /** Ends the wait for the writes in flight, while one is in progress. */
  private settled: (() => void) | undefined;

  constructor(clock: Clock) {
    this.sleep = new WakeableSleep(clock);
  }

  notify(): void {
    this.woken = true;
    this.settled?.();
    this.sleep.wake();
  }

  /** A round is about to read the outbox: what was notified so far, it will see. */
  reading(): void {
    this.woken = false;
  }

  /** Waits `wait` ms, or with IN_FLIGHT until the next notify; a notify cuts either short. */
  async pause(wait: number | typeof IN_FLIGHT): Promise<void> {
    if (wait === 0) return;
    if (this.woken) {
      this.woken = false;
      return;
    }
    if (wait !== IN_FLIGHT) return this.sleep.sleep(wait);
    // Not a sleep on the clock: virtual time in tests must not move while a write is in flight.
    await new Promise<void>((resolve) => (this.settled = resolve));
    this.settled = undefined;
  }
}
