import { timerDelayMs } from '../clock.js';
import { describeError } from '../errors.js';
import { RequeueWatch } from './requeueWatch.js';
import { SinkWorker, type EngineSink, type SinkConnectionState, type SinkWorkerOptions } from './sinkWorker.js';

export interface DrainReport {
  sink: string;
  drained: boolean;
  pending: number;
  dead: number;
  lastError: string | null;
}

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
  private readonly deps: Omit<SinkWorkerOptions, keyof EngineSink>;
  /** Whose timer checks this engine's re-queue count: the process's, or this engine's own. */
  private readonly requeues: RequeueWatch;
  /** The engine's own watch ends with it; the process's ends after its last engine. */
  private readonly ownsRequeues: boolean;

  constructor(
    sinks: readonly EngineSink[],
    /**
     * Shared by the workers; `onLeaseLost` stops the tenant's runtime, this engine included.
     * `requeues`: the process's RequeueWatch, shared by its engines; without one, the engine watches alone.
     */
    deps: Omit<SinkWorkerOptions, keyof EngineSink> & { requeues?: RequeueWatch },
  ) {
    const { requeues, ...workerDeps } = deps;
    this.deps = workerDeps;
    this.requeues = requeues ?? new RequeueWatch(deps.clock, deps.logger);
    this.ownsRequeues = requeues === undefined;
    // Object.assign: two spreads give each worker's options a hidden class of its own on Node 20.
    this.workers = sinks.map((sink) => new SinkWorker(Object.assign({}, sink, workerDeps)));
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
    this.running = Promise.all(
      this.workers.map((w) =>
        w.run(this.stopLaunching.signal, { abortWrites: this.abort.signal }).catch((error: unknown) => {
          this.deps.logger.fatal({ sink: w.name, err: describeError(error) }, 'sink worker crashed');
        }),
      ),
    );
    this.requeues.watch(
      this.deps.store.deadLetters,
      () => {
        for (const w of this.workers) w.reloadPending();
      },
      this.stopLaunching.signal,
    );
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
      if (this.ownsRequeues) await this.requeues.stopped();
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
