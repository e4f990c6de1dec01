import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { LogKind } from '../logs.js';
import type { Sink } from '../sinkContract/sink.js';
import type { ChangefeedStore } from '../store/changefeedStore.js';
import type { CircuitBreakerConfig } from '../sinkContract/deliveryConfig.js';
import type { EndpointBackoffConfig, RetryConfig } from '../sinkContract/deliveryConfig.js';

/** What a sink worker is given by the delivery engine: its sink, the store, and the sink's delivery settings. */
export interface SinkWorkerOptions {
  sink: Sink;
  store: ChangefeedStore;
  clock: Clock;
  logger: Logger;
  retry: RetryConfig;
  /** delivery.poison.strikes: 0 turns the poison search off. */
  poisonStrikes?: number;
  circuitBreaker: CircuitBreakerConfig;
  /** delivery.endpointBackoff: the schedule and give-up rule of a destination failing as a whole. */
  endpointBackoff?: EndpointBackoffConfig;
  batchSize: number;
  maxInFlight: number;
  /** False for events this sink must not receive (its filter). */
  accepts?: (event: { log: LogKind; type: string }) => boolean;
  random?: () => number;
  /** Called after each batch outcome, for metrics. */
  onOutcome?: (outcome: BatchOutcome) => void;
  /** The lease fence refused a write (LEASE_LOST): the worker has stopped; the tenant's runtime stops. */
  onLeaseLost?: (error: unknown) => void;
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
