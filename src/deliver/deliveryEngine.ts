import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { describeError } from '../errors.js';
import type { Sink } from '../sinks/sink.js';
import type { ChangefeedStore } from '../store/changefeedStore.js';
import type { SinkDeliveryConfig } from './deliveryConfig.js';
import { compileSinkFilter, type SinkFilter } from './sinkFilter.js';
import { SinkWorker, type BatchOutcome } from './sinkWorker.js';

export interface EngineSink {
  sink: Sink;
  delivery: SinkDeliveryConfig;
  filter?: SinkFilter | undefined;
}

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
  private readonly abort = new AbortController();
  private running: Promise<unknown> | undefined;

  constructor(
    sinks: readonly EngineSink[],
    private readonly deps: { store: ChangefeedStore; clock: Clock; logger: Logger; random?: () => number; onOutcome?: (o: BatchOutcome) => void },
  ) {
    this.workers = sinks.map(
      ({ sink, delivery, filter }) =>
        new SinkWorker({
          sink,
          store: deps.store,
          clock: deps.clock,
          logger: deps.logger,
          retry: delivery.retry,
          circuitBreaker: delivery.circuitBreaker,
          accepts: compileSinkFilter(filter),
          batchSize: Math.min(delivery.batchSize ?? sink.limits.maxBatchSize, sink.limits.maxBatchSize),
          maxInFlight: Math.min(delivery.maxInFlight ?? sink.limits.defaultInFlight ?? sink.limits.maxInFlight, sink.limits.maxInFlight),
          random: deps.random,
          onOutcome: deps.onOutcome,
        }),
    );
  }

  get sinkNames(): string[] {
    return this.workers.map((w) => w.name);
  }

  /** Per sink, for readiness: disabled, and since when not connected. */
  connectionStates(): { sink: string; disabled: boolean; disconnectedSince: number | null; lastError: string | null }[] {
    return this.workers.map((w) => ({ sink: w.name, ...w.connectionState }));
  }

  start(): void {
    if (this.running) return;
    this.running = Promise.all(
      this.workers.map((w) =>
        w.run(this.abort.signal).catch((error: unknown) => {
          this.deps.logger.fatal({ sink: w.name, err: describeError(error) }, 'sink worker crashed');
        }),
      ),
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
        const drained = await w.drain(this.abort.signal, deadline);
        const counts = this.deps.store.outbox.counts(w.name);
        const state = this.deps.store.sinks.list().find((s) => s.name === w.name);
        return { sink: w.name, drained, pending: counts.pending, dead: counts.dead, lastError: state?.lastError ?? null };
      }),
    );
  }

  /** Stops every worker after its in-flight writes, then closes the sinks. Idempotent. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.running;
    await Promise.all(this.workers.map((w) => w.close()));
  }
}
