import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ResponseMeta } from '../api/responseHeaders.js';
import type { BatchOutcome } from '../deliver/sinkWorkerOptions.js';
import { LOGS, type LogKind } from '../logs.js';
import type { PollResult } from '../poll/logPoller.js';
import type { ScheduleSnapshot } from '../schedule/scheduleViews.js';
import type { ChangefeedStore } from '../store/changefeedStore.js';

const LATENCY_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];
const DELAY_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200];

/**
 * Every metric a tenant exports on /metrics, in its own registry labelled `tenant` (the process
 * serves them together, see processMetrics.ts; tests can run several). Counters move as things happen; gauges about the store (outbox depth, dead
 * letters, watermark age, gaps) are read from it at scrape time, so they are always current.
 */
export class ChangefeedMetrics {
  readonly registry = new Registry();
  private readonly polls: Counter<'log' | 'outcome'>;
  private readonly requests: Counter<'endpoint' | 'status'>;
  private readonly rateLimited: Counter;
  private readonly budgetRemaining: Gauge;
  private readonly budgetAllowance: Gauge;
  private readonly ingested: Counter<'log'>;
  private readonly duplicates: Counter<'log'>;
  private readonly deliveries: Counter<'sink' | 'outcome'>;
  private readonly deliveryLatency: Histogram<'sink'>;
  private readonly detectionDelay: Histogram<'log'>;
  private readonly clockRejected: Counter;
  private readonly quarantined: Counter<'log'>;

  constructor(
    store: ChangefeedStore,
    options: {
      /** Set as the `tenant` label of every series. */
      tenant?: string;
      now: () => number;
      allowancePerHour: () => number;
      /** The scheduler's current choices (absent in tests that run no poll loop). */
      schedule?: () => ScheduleSnapshot;
      /** The believed offset of the service's clock from ours, seconds. */
      serviceClockSkewSeconds?: () => number;
      defaultMetrics?: boolean;
    },
  ) {
    const registers = [this.registry];
    if (options.tenant !== undefined) this.registry.setDefaultLabels({ tenant: options.tenant });
    if (options.defaultMetrics ?? true) collectProcessMetrics(this.registry);
    this.polls = new Counter({
      name: 'changefeed_polls_total',
      help: 'Polls of a watched log, by log and outcome (ok or an error code).',
      labelNames: ['log', 'outcome'],
      registers,
    });
    this.requests = new Counter({
      name: 'changefeed_api_requests_total',
      help: 'GET requests to the service, by endpoint and HTTP status.',
      labelNames: ['endpoint', 'status'],
      registers,
    });
    this.rateLimited = new Counter({
      name: 'changefeed_api_rate_limited_total',
      help: '429 answers from the service.',
      registers,
    });
    this.quarantined = new Counter({
      name: 'changefeed_entries_quarantined_total',
      help:
        'Entries that could not become events (no id, bad performedAt, too large), by log; see ' +
        'changefeed quarantine list.',
      labelNames: ['log'],
      registers,
    });
    this.clockRejected = new Counter({
      name: 'changefeed_service_clock_rejected_total',
      help: 'Date headers of the service not believed: a jump beyond api.clockToleranceSeconds not (yet) confirmed.',
      registers,
    });
    const skew = options.serviceClockSkewSeconds;
    if (skew) {
      new Gauge({
        name: 'changefeed_service_clock_skew_seconds',
        help: 'Believed offset of the service clock from the local clock (positive: the service is ahead).',
        registers,
        collect() {
          this.set(skew());
        },
      });
    }
    this.budgetRemaining = new Gauge({
      name: 'changefeed_budget_remaining',
      help: 'RateLimit-Remaining from the last response: reads left in the window.',
      registers,
    });
    this.budgetAllowance = new Gauge({
      name: 'changefeed_budget_allowance_per_hour',
      help: 'Requests per hour the daemon allows itself: min(cap, RateLimit-Limit) less the reserve.',
      registers,
      collect() {
        this.set(options.allowancePerHour());
      },
    });
    const scheduleGauges: [string, string, (s: ScheduleSnapshot) => number][] = [
      [
        'changefeed_schedule_alpha',
        'Exponent of the poll allocation in use (frequency ∝ rate^alpha); with alpha auto, the one ' +
          'chosen for the current rates; 0 under round-robin.',
        (s) => s.alpha,
      ],
      [
        'changefeed_schedule_poll_budget_per_hour',
        'Requests per hour the scheduler divides among the watched logs: the pace less discovery and follow-ups.',
        (s) => s.pollBudgetPerHour,
      ],
      [
        'changefeed_schedule_follow_ups_last_hour',
        'Follow-up polls of edit sessions in progress sent in the last hour.',
        (s) => s.followUpsLastHour,
      ],
    ];
    const schedule = options.schedule;
    if (schedule) {
      for (const [name, help, pick] of scheduleGauges) {
        new Gauge({
          name,
          help,
          registers,
          collect() {
            this.set(pick(schedule()));
          },
        });
      }
    }
    this.ingested = new Counter({
      name: 'changefeed_entries_ingested_total',
      help: 'New activity entries stored as events, by log.',
      labelNames: ['log'],
      registers,
    });
    this.duplicates = new Counter({
      name: 'changefeed_duplicates_dropped_total',
      help: 'Entries read again (window overlap, retries) and dropped by id, by log.',
      labelNames: ['log'],
      registers,
    });
    this.deliveries = new Counter({
      name: 'changefeed_deliveries_total',
      help: 'Event deliveries by sink and outcome (delivered, retried, dead).',
      labelNames: ['sink', 'outcome'],
      registers,
    });
    this.deliveryLatency = new Histogram({
      name: 'changefeed_delivery_latency_seconds',
      help: 'Time from ingestion to acknowledgement by the sink.',
      labelNames: ['sink'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.detectionDelay = new Histogram({
      name: 'changefeed_detection_delay_seconds',
      help: "Time from an entry's performedAt to its ingestion.",
      labelNames: ['log'],
      buckets: DELAY_BUCKETS,
      registers,
    });
    new Gauge({
      name: 'changefeed_outbox_pending',
      help: 'Events waiting for delivery, by sink.',
      labelNames: ['sink'],
      registers,
      async collect() {
        for (const sink of (await store.sinks.list()).filter((s) => s.active))
          this.set({ sink: sink.name }, (await store.outbox.counts(sink.name)).pending);
      },
    });
    new Gauge({
      name: 'changefeed_dead_letters',
      help: 'Events a sink gave up on, by sink.',
      labelNames: ['sink'],
      registers,
      async collect() {
        for (const sink of (await store.sinks.list()).filter((s) => s.active))
          this.set({ sink: sink.name }, (await store.outbox.counts(sink.name)).dead);
      },
    });
    new Gauge({
      name: 'changefeed_watermark_age_seconds',
      help:
        'Age of the oldest cursor among active logs of a kind: how far behind the feed may be. ' +
        'Catches a feed that silently stopped.',
      labelNames: ['log'],
      registers,
      async collect() {
        const now = options.now();
        const oldest = new Map<LogKind, number>();
        for (const w of await store.watchedLogs.list()) {
          if (w.status !== 'active' || w.windowEnd === null) continue;
          oldest.set(w.log, Math.min(oldest.get(w.log) ?? Number.POSITIVE_INFINITY, w.windowEnd));
        }
        for (const [log, end] of oldest) this.set({ log: LOGS[log].slug }, Math.max(0, (now - end) / 1000));
      },
    });
    new Gauge({
      name: 'changefeed_coverage_gaps',
      help:
        'Watched logs with a gap in coverage, as changefeed status shows it: disabled (missing ' +
        'scope, rejected request), gone, or failing every poll; by log.',
      labelNames: ['log'],
      registers,
      async collect() {
        const counts = new Map<string, number>(Object.values(LOGS).map((l) => [l.slug, 0]));
        for (const w of await store.watchedLogs.list()) {
          if (w.status !== 'active' || w.consecutiveFailures > 0)
            counts.set(LOGS[w.log].slug, (counts.get(LOGS[w.log].slug) ?? 0) + 1);
        }
        for (const [log, n] of counts) this.set({ log }, n);
      },
    });
  }

  observeResponse(meta: ResponseMeta, path: string): void {
    this.requests.inc({ endpoint: endpointOf(path), status: String(meta.status) });
    if (meta.status === 429) this.rateLimited.inc();
    if (meta.remaining !== undefined) this.budgetRemaining.set(meta.remaining);
  }

  observeClockRejected(): void {
    this.clockRejected.inc();
  }

  observePoll(log: LogKind, outcome: { result?: PollResult; error?: unknown }, now: number): void {
    const slug = LOGS[log].slug;
    if (outcome.result) {
      this.polls.inc({ log: slug, outcome: 'ok' });
      this.ingested.inc({ log: slug }, outcome.result.emitted);
      this.duplicates.inc({ log: slug }, outcome.result.duplicates);
      if (outcome.result.quarantined) this.quarantined.inc({ log: slug }, outcome.result.quarantined);
      for (const t of outcome.result.emittedPerformedAt)
        this.detectionDelay.observe({ log: slug }, Math.max(0, (now - t) / 1000));
    } else {
      const code = (outcome.error as { code?: unknown } | undefined)?.code;
      this.polls.inc({ log: slug, outcome: typeof code === 'string' ? code : 'error' });
    }
  }

  observeDelivery(outcome: BatchOutcome): void {
    if (outcome.delivered) this.deliveries.inc({ sink: outcome.sink, outcome: 'delivered' }, outcome.delivered);
    if (outcome.retried) this.deliveries.inc({ sink: outcome.sink, outcome: 'retried' }, outcome.retried);
    if (outcome.dead) this.deliveries.inc({ sink: outcome.sink, outcome: 'dead' }, outcome.dead);
    for (const ms of outcome.latenciesMs) this.deliveryLatency.observe({ sink: outcome.sink }, ms / 1000);
  }
}

/** A bounded label: the kind of endpoint, never the object id. */
function endpointOf(path: string): string {
  if (path.endsWith('/identity-provider-events')) return 'identity_provider_activity';
  if (/\/careers\/[^/]+\/activity$/.test(path)) return 'career_activity';
  if (/\/skills\/[^/]+\/activity$/.test(path)) return 'skill_activity';
  if (path.endsWith('/careers')) return 'career_list';
  if (path.endsWith('/skills')) return 'skill_list';
  if (path.endsWith('/ping')) return 'ping';
  return 'other';
}

/** The process's own metrics (memory, CPU, event loop), once per process whatever the tenants. */
export function collectProcessMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry, prefix: 'changefeed_process_' });
}
