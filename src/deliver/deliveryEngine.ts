import { timerDelayMs } from '../clock.js';
import { describeError, isAbortError } from '../errors.js';
import { SinkWorker, type EngineSink, type SinkConnectionState, type SinkWorkerOptions } from './sinkWorker.js';

export interface DrainReport {
  sink: string;
  drained: boolean;
  pending: number;
  dead: number;
  lastError: string | null;
}

/** How often the store's re-queue count is read: a CLI that re-queued dead letters has no way to notify. */
const REQUEUE_CHECK_MS = 500;

/**
 * Owns delivery to every sink: one worker per sink, each with its own retries, batching and
 * in-flight limit, so a slow or failing sink holds up neither the others nor polling.
 */
export class DeliveryEngine {
  private readonly workers: SinkWorker[];
  /** Ends the workers' loops: nothing new is launched. */
  private readonly stopLaunching = new AbortController();
  /** Aborts the writes in flight (their events stay pending). */
  private readonly abort = new AbortController();
  private running: Promise<unknown> | undefined;

  constructor(
    sinks: readonly EngineSink[],
    /** Shared by the workers; `onLeaseLost` stops the tenant's runtime, this engine included. */
    private readonly deps: Omit<SinkWorkerOptions, keyof EngineSink>,
  ) {
    this.workers = sinks.map((sink) => new SinkWorker({ ...sink, ...deps }));
  }

  get sinkNames(): string[] {
    return this.workers.map((w) => w.name);
  }

  /** Per sink, for readiness and metrics: disabled, the circuit, and since when not connected. */
  connectionStates(): SinkConnectionState[] {
    return this.workers.map((w) => w.connectionState);
  }

  start(): void {
    if (this.running) return;
    this.running = Promise.all([
      ...this.workers.map((w) =>
        w.run(this.stopLaunching.signal, { abortWrites: this.abort.signal }).catch((error: unknown) => {
          this.deps.logger.fatal({ sink: w.name, err: describeError(error) }, 'sink worker crashed');
        }),
      ),
      this.watchRequeues(this.stopLaunching.signal),
    ]);
  }

  /** `changefeed dead-letters retry` runs in another process and can only leave a mark in the store. */
  private async watchRequeues(signal: AbortSignal): Promise<void> {
    let seen: number | undefined;
    while (!signal.aborted) {
      try {
        const count = await this.deps.store.deadLetters.requeueCount();
        if (seen !== undefined && count !== seen) for (const w of this.workers) w.reloadPending();
        seen = count;
      } catch (error) {
        // A store that does not answer is the workers' outage to report; this check tries again.
        this.deps.logger.warn(
          { err: describeError(error) },
          'checking for re-queued dead letters failed; trying again',
        );
      }
      await this.deps.clock.sleep(REQUEUE_CHECK_MS, signal).catch((error: unknown) => {
        if (!isAbortError(error)) throw error;
      });
    }
  }

  /** New events are in the outbox. */
  notify(): void {
    for (const w of this.workers) w.notify();
  }

  /** Delivers what is pending to every sink, up to `deadline`; used by `run --once`. */
  async drain(deadline: number): Promise<DrainReport[]> {
    return Promise.all(
      this.workers.map(async (w) => {
        await w.run(this.abort.signal, { deadline });
        const counts = await this.deps.store.outbox.counts(w.name);
        return {
          sink: w.name,
          drained: counts.pending === 0,
          pending: counts.pending,
          dead: counts.dead,
          lastError: w.connectionState.lastError,
        };
      }),
    );
  }

  /**
   * Stops launching batches, lets the writes in flight finish for up to `drainMs` (default 0),
   * aborts those still running then (their events stay pending), and closes the sinks. Idempotent.
   */
  async stop(options: { drainMs?: number } = {}): Promise<void> {
    const drainMs = options.drainMs ?? 0;
    this.stopLaunching.abort();
    if (drainMs <= 0) this.abort.abort();
    // A real timer, not the clock, as SinkWorker.run's deadline.
    const cutOff = setTimeout(() => this.abort.abort(), timerDelayMs(drainMs));
    try {
      await this.running;
    } finally {
      clearTimeout(cutOff);
    }
    await Promise.all(this.workers.map((w) => w.close()));
  }

  /** Aborts the writes in flight now, cutting a drain short (a lost lease: their acks would be refused). */
  abortWrites(): void {
    this.abort.abort();
  }
}
