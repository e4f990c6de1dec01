import { Counter, Gauge, Histogram, type MetricValue, type Registry } from 'prom-client';
import type { ResponseMeta } from '../api/responseHeaders.js';
import type { BatchOutcome, SinkConnectionState } from '../deliver/sinkWorker.js';
import type { FeedObserver, FeedMode } from '../feed/feedObserver.js';
import { LOG_KINDS, type LogKind } from '../logs.js';
import type { PollResult } from '../poll/logPoller.js';
import type { ScheduleSnapshot } from '../schedule/pollScheduler.js';
import { ScrapeGauge } from './scrapeGauge.js';
import type { ChangefeedStore } from '../store/changefeedStore.js';
import type { CircuitState, DeliveryCounts, LogKindCoverage } from '../store/storeRecords.js';

const LATENCY_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];
const DELAY_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200];
/** Every state of a circuit, in the order the `state` label lists them. */
const CIRCUIT_STATES: readonly CircuitState[] = ['closed', 'half-open', 'open'];

/** A sink's state now, as its worker holds it. */
export type SinkMetricState = Pick<
  SinkConnectionState,
  'sink' | 'disabled' | 'circuit' | 'disconnectedSince' | 'failingSince'
>;

/** What a running tenant lets the metrics read at scrape time. */
export interface TenantMetricSource {
  store: ChangefeedStore;
  /** Milliseconds, on the clock the store's times are written with. */
  now(): number;
  allowancePerHour(): number;
  /** The scheduler's current choices (absent in tests that run no poll loop). */
  schedule?: () => ScheduleSnapshot;
  /** The believed offset of the service's clock from ours, seconds. */
  serviceClockSkewSeconds?: () => number;
  /** Each configured sink's connection, circuit and disabled state. */
  sinks?: () => readonly SinkMetricState[];
}

/** The counters and histograms a tenant's TenantMetrics moves, each labelled `tenant`. */
function tenantSeries(registry: Registry) {
  const registers = [registry];
  const counter = <L extends string>(name: string, help: string, labelNames: L[]) =>
    new Counter({ name, help, labelNames, registers });
  const byLog: ('tenant' | 'log')[] = ['tenant', 'log'];
  return {
    polls: counter('changefeed_polls_total', 'Polls of a watched log, by log and outcome (ok or an error code).', [
      ...byLog,
      'outcome',
    ]),
    requests: counter('changefeed_api_requests_total', 'GET requests to the service, by endpoint and HTTP status.', [
      'tenant',
      'endpoint',
      'status',
    ]),
    rateLimited: counter('changefeed_api_rate_limited_total', '429 answers from the service.', ['tenant']),
    quarantined: counter(
      'changefeed_entries_quarantined_total',
      'Entries that could not become events (no id, bad performedAt, too large), by log; see ' +
        'changefeed quarantine list.',
      byLog,
    ),
    clockRejected: counter(
      'changefeed_service_clock_rejected_total',
      'Date headers of the service not believed: a jump beyond api.clockToleranceSeconds not (yet) confirmed.',
      ['tenant'],
    ),
    ingested: counter('changefeed_entries_ingested_total', 'New activity entries stored as events, by log.', byLog),
    duplicates: counter(
      'changefeed_duplicates_dropped_total',
      'Entries read again (window overlap, retries) and dropped by id, by log.',
      byLog,
    ),
    deliveries: counter(
      'changefeed_deliveries_total',
      'Event deliveries by sink and outcome (delivered, retried, dead).',
      ['tenant', 'sink', 'outcome'],
    ),
    deliveryLatency: new Histogram({
      name: 'changefeed_delivery_latency_seconds',
      help: 'Time from ingestion to acknowledgement by the sink.',
      labelNames: ['tenant', 'sink'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    detectionDelay: new Histogram({
      name: 'changefeed_detection_delay_seconds',
      help: "Time from an entry's performedAt to its ingestion.",
      labelNames: byLog,
      buckets: DELAY_BUCKETS,
      registers,
    }),
    feedRequests: counter(
      'changefeed_feed_requests_total',
      'Requests to the pull feed answered, by mode (page, stream) and status class (2xx, 4xx, 5xx; ' +
        'aborted: the client left before an answer). A stream counts when it ends.',
      ['tenant', 'mode', 'status_class'],
    ),
    feedStreams: new Gauge({
      name: 'changefeed_feed_open_streams',
      help: 'Server-Sent Events streams of the feed open now.',
      labelNames: ['tenant'],
      registers,
    }),
    feedEventsServed: counter(
      'changefeed_feed_events_served_total',
      'Events sent to feed clients, in pages and streams.',
      ['tenant', 'mode'],
    ),
  };
}

/**
 * Every series about the tenants, labelled `tenant`, in the process's one registry. Created once
 * per process (processMetrics.ts), not per tenant or per reload: a tenant restarted, a lease
 * acquired again or a SIGHUP never resets a counter. Counters move through a tenant's
 * TenantMetrics; gauges are read at scrape time from the tenants attached now (the store for
 * outbox depth, dead letters, watermark age and gaps; the workers for the sinks, their connection
 * and circuit), so they are always current and a tenant that stopped here drops out of them.
 */
export class ChangefeedMetrics {
  readonly series: ReturnType<typeof tenantSeries>;
  /** The tenants running here, whose gauges are read at each scrape. */
  readonly sources = new Map<string, TenantMetricSource>();
  /** RateLimit-Remaining of each tenant's last answer, exported while the tenant is attached. */
  readonly budgets = new Map<string, number>();
  /**
   * What the scrape under way read of each tenant's store, by key: the gauges that need the same
   * rows share one query (per tenant its sinks and its watched logs, per sink its outbox counts),
   * which Prometheus repeats for every tenant every scrape. The first gauge to ask reads. Dropped
   * when the scrape has answered, so the rows of every tenant are not held between scrapes.
   */
  private scrapeReads: Map<string, Promise<unknown>> | undefined;
  /**
   * What the scrape under way asked of each tenant's runtime (its schedule, its sinks' states),
   * shared by the gauges that show it: three gauges show the schedule and six the sinks, for every
   * tenant, every scrape.
   */
  private scrapeViews: WeakMap<TenantMetricSource, RuntimeView> | undefined;

  constructor(private readonly registry: Registry) {
    this.series = tenantSeries(registry);
    this.defineScrapeGauges();
  }

  /** A tenant's hand on these metrics. Counters already counted for it go on from where they were. */
  forTenant(tenant: string): TenantMetrics {
    return new TenantMetrics(this, tenant);
  }

  /**
   * Runs one scrape (`collect`, the registry's), during which each tenant's store is read once
   * for what its gauges share; what was read is let go when it ends. A scrape that overlaps
   * another shares its reads, all of them made after both began.
   */
  async scraping<T>(collect: () => Promise<T>): Promise<T> {
    const reads = new Map<string, Promise<unknown>>();
    const views = new WeakMap<TenantMetricSource, RuntimeView>();
    this.scrapeReads = reads;
    this.scrapeViews = views;
    try {
      return await collect();
    } finally {
      if (this.scrapeReads === reads) this.scrapeReads = undefined;
      if (this.scrapeViews === views) this.scrapeViews = undefined;
    }
  }

  /** The runtime's schedule as this scrape saw it first. */
  private scheduleOf(source: TenantMetricSource): ScheduleSnapshot | undefined {
    const view = this.runtimeView(source);
    if (!('schedule' in view)) view.schedule = source.schedule?.();
    return view.schedule;
  }

  /** The runtime's sinks as this scrape saw them first. */
  private sinksOf(source: TenantMetricSource): readonly SinkMetricState[] | undefined {
    const view = this.runtimeView(source);
    if (!('sinks' in view)) view.sinks = source.sinks?.();
    return view.sinks;
  }

  private runtimeView(source: TenantMetricSource): RuntimeView {
    let view = this.scrapeViews?.get(source);
    if (view === undefined) {
      view = {};
      this.scrapeViews?.set(source, view);
    }
    return view;
  }

  private readOnce<T>(key: string, read: () => Promise<T>): Promise<T> {
    const reads = this.scrapeReads;
    if (reads === undefined) return read();
    let pending = reads.get(key) as Promise<T> | undefined;
    if (!pending) {
      pending = read();
      reads.set(key, pending);
    }
    return pending;
  }

  private countsOf(tenant: string, store: ChangefeedStore, sink: string): Promise<DeliveryCounts> {
    return this.readOnce(`counts\u0000${tenant}\u0000${sink}`, () => store.outbox.counts(sink));
  }

  /**
   * Runs `read` for each attached tenant. A tenant whose store refuses is left out of this
   * scrape (its absence is the signal, beside the readiness check), not the whole /metrics. A
   * read that answers at once (the gauges of what the runtime holds) makes no promise: ten of
   * the gauges do so for every tenant, every scrape.
   */
  private async eachTenant(read: (tenant: string, source: TenantMetricSource) => Promise<void> | void): Promise<void> {
    const reading: Promise<void>[] = [];
    for (const [tenant, source] of this.sources) {
      try {
        const answer = read(tenant, source);
        if (answer !== undefined) reading.push(answer.catch(() => undefined));
      } catch {
        // Left out of this scrape; the tenant's own loops report the store's refusal.
      }
    }
    await Promise.all(reading);
  }

  /**
   * The sinks the tenant delivers to: its workers' when it runs them (the daemon), which are the
   * sinks its start made active in the store; else those the store lists as active.
   */
  private async activeSinks(tenant: string, source: TenantMetricSource): Promise<string[]> {
    const running = this.sinksOf(source);
    if (running) return running.map((s) => s.sink);
    const sinks = await this.readOnce(`sinks\u0000${tenant}`, () => source.store.sinks.list());
    return sinks.filter((s) => s.active).map((s) => s.name);
  }

  /** The tenant's watched logs as its gauges show them: a few numbers per kind, not its rows. */
  private logKinds(tenant: string, store: ChangefeedStore): Promise<Map<LogKind, LogKindGauges>> {
    return this.readOnce(`logs\u0000${tenant}`, async () => logKindGauges(await store.watchedLogs.coverage()));
  }

  private defineScrapeGauges(): void {
    const gauge = (
      name: string,
      help: string,
      labelNames: string[],
      read: (
        set: (labels: Record<string, string>, value: number) => void,
        tenant: string,
        source: TenantMetricSource,
      ) => Promise<void> | void,
    ): void => {
      new ScrapeGauge({ name, help, labelNames: ['tenant', ...labelNames], registers: [this.registry] }, async () => {
        const values: MetricValue<string>[] = [];
        await this.eachTenant((tenant, source) =>
          read((labels, value) => values.push({ labels, value }), tenant, source),
        );
        return values;
      });
    };
    // Only for the tenants running here: the last answer of a tenant handed over or removed
    // would stay for ever, and an exhausted one keep its alert firing from this replica.
    gauge(
      'changefeed_budget_remaining',
      'RateLimit-Remaining from the last response: reads left in the window.',
      [],
      (set, tenant) => {
        const remaining = this.budgets.get(tenant);
        if (remaining !== undefined) set({ tenant }, remaining);
      },
    );
    gauge(
      'changefeed_budget_allowance_per_hour',
      'Requests per hour the daemon allows itself: min(cap, RateLimit-Limit) less the reserve.',
      [],
      (set, tenant, source) => set({ tenant }, source.allowancePerHour()),
    );
    gauge(
      'changefeed_service_clock_skew_seconds',
      'Believed offset of the service clock from the local clock (positive: the service is ahead).',
      [],
      (set, tenant, source) => {
        if (source.serviceClockSkewSeconds) set({ tenant }, source.serviceClockSkewSeconds());
      },
    );
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
    for (const [name, help, pick] of scheduleGauges)
      gauge(name, help, [], (set, tenant, source) => {
        const schedule = this.scheduleOf(source);
        if (schedule) set({ tenant }, pick(schedule));
      });
    const outboxGauges: [string, string, (counts: DeliveryCounts, now: number) => number][] = [
      ['changefeed_outbox_pending', 'Events waiting for delivery, by sink.', (c) => c.pending],
      ['changefeed_dead_letters', 'Events a sink gave up on, by sink.', (c) => c.dead],
      [
        'changefeed_sink_oldest_pending_age_seconds',
        'Age of the oldest event waiting for a sink (since its ingestion); 0 when none waits. Grows while ' +
          'a sink is down, however few deliveries are attempted meanwhile.',
        (c, now) => (c.oldestPendingIngestedAt === null ? 0 : Math.max(0, (now - c.oldestPendingIngestedAt) / 1000)),
      ],
    ];
    for (const [name, help, pick] of outboxGauges)
      gauge(name, help, ['sink'], async (set, tenant, source) => {
        const now = source.now();
        for (const sink of await this.activeSinks(tenant, source))
          set({ tenant, sink }, pick(await this.countsOf(tenant, source.store, sink), now));
      });
    const sinkGauges: [string, string, (s: SinkMetricState) => boolean][] = [
      [
        'changefeed_sink_connected',
        '1 while the sink is connected and its destination takes events; 0 while not connected or while ' +
          'the destination fails as a whole (changefeed_sink_endpoint_failing), as changefeed status shows it.',
        (s) => s.disconnectedSince === null && s.failingSince === null,
      ],
      [
        'changefeed_sink_endpoint_failing',
        '1 while the destination fails as a whole (a webhook answering 401, 403, 404, 429, 5xx, not answering or not ' +
          'reachable): the sink backs off on its endpoint schedule and its events stay pending; else 0.',
        (s) => s.failingSince !== null,
      ],
      [
        'changefeed_sink_disabled',
        '1 once the sink was disabled (410 Gone, or endpoint-level failures for delivery.endpointBackoff.' +
          'disableAfterSeconds); it stays so until fixed and restarted.',
        (s) => s.disabled,
      ],
    ];
    for (const [name, help, holds] of sinkGauges)
      gauge(name, help, ['sink'], (set, tenant, source) => {
        for (const s of this.sinksOf(source) ?? []) set({ tenant, sink: s.sink }, holds(s) ? 1 : 0);
      });
    gauge(
      'changefeed_sink_circuit_state',
      "The sink's circuit breaker: 1 for its current state (closed, half_open, open), 0 for the others.",
      ['sink', 'state'],
      (set, tenant, source) => {
        for (const s of this.sinksOf(source) ?? [])
          // Prometheus label values take no hyphen: half-open is half_open.
          for (const state of CIRCUIT_STATES)
            set({ tenant, sink: s.sink, state: state.replace('-', '_') }, s.circuit === state ? 1 : 0);
      },
    );
    gauge(
      'changefeed_watermark_age_seconds',
      'Age of the oldest cursor among active logs of a kind: how far behind the feed may be. ' +
        'Catches a feed that silently stopped.',
      ['log'],
      async (set, tenant, source) => {
        const now = source.now();
        for (const [log, { oldestWindowEnd }] of await this.logKinds(tenant, source.store))
          if (oldestWindowEnd !== undefined) set({ tenant, log }, Math.max(0, (now - oldestWindowEnd) / 1000));
      },
    );
    gauge(
      'changefeed_coverage_gaps',
      'Watched logs with a gap in coverage, as changefeed status shows it: disabled (missing ' +
        'scope, rejected request), gone, or failing every poll; by log.',
      ['log'],
      async (set, tenant, source) => {
        for (const [log, { gaps }] of await this.logKinds(tenant, source.store)) set({ tenant, log }, gaps);
      },
    );
  }
}

/** One tenant's hand on the process's metrics: what it counts carries its `tenant` label. */
export class TenantMetrics implements FeedObserver {
  constructor(
    private readonly all: ChangefeedMetrics,
    readonly tenant: string,
  ) {}

  /** The tenant runs here: its gauges are read from `source` at each scrape. */
  attach(source: TenantMetricSource): void {
    this.all.sources.set(this.tenant, source);
  }

  /**
   * The tenant stopped here: its gauges leave /metrics (unless a newer runtime of it attached
   * since); its counters stay, to go on if it returns.
   */
  detach(source: TenantMetricSource): void {
    if (this.all.sources.get(this.tenant) !== source) return;
    this.all.sources.delete(this.tenant);
    this.all.budgets.delete(this.tenant);
  }

  observeResponse(meta: ResponseMeta, path: string): void {
    const tenant = this.tenant;
    this.all.series.requests.inc({ tenant, endpoint: endpointOf(path), status: String(meta.status) });
    if (meta.status === 429) this.all.series.rateLimited.inc({ tenant });
    if (meta.remaining !== undefined) this.all.budgets.set(tenant, meta.remaining);
  }

  observeClockRejected(): void {
    this.all.series.clockRejected.inc({ tenant: this.tenant });
  }

  observePoll(log: LogKind, outcome: { result?: PollResult; error?: unknown }, now: number): void {
    const tenant = this.tenant;
    const labels = { tenant, log };
    const { polls, ingested, duplicates, quarantined, detectionDelay } = this.all.series;
    // Label objects written out, not `{ ...labels, outcome }`: on Node 20 an object spread followed by
    // more properties gets a hidden class of its own each time (about 170 bytes, kept by prom-client).
    if (outcome.result) {
      polls.inc({ tenant, log, outcome: 'ok' });
      ingested.inc(labels, outcome.result.emitted);
      duplicates.inc(labels, outcome.result.duplicates);
      if (outcome.result.quarantined) quarantined.inc(labels, outcome.result.quarantined);
      for (const t of outcome.result.emittedPerformedAt) detectionDelay.observe(labels, Math.max(0, (now - t) / 1000));
    } else {
      const code = (outcome.error as { code?: unknown } | undefined)?.code;
      polls.inc({ tenant, log, outcome: typeof code === 'string' ? code : 'error' });
    }
  }

  observeDelivery(outcome: BatchOutcome): void {
    const { tenant } = this;
    const { sink } = outcome;
    const labels = { tenant, sink };
    const { deliveries, deliveryLatency } = this.all.series;
    if (outcome.delivered) deliveries.inc({ tenant, sink, outcome: 'delivered' }, outcome.delivered);
    if (outcome.retried) deliveries.inc({ tenant, sink, outcome: 'retried' }, outcome.retried);
    if (outcome.dead) deliveries.inc({ tenant, sink, outcome: 'dead' }, outcome.dead);
    // An event ingested by another replica (a lease that moved) carries its clock: a negative age
    // would take the histogram's _sum, a counter, down.
    for (const ms of outcome.latenciesMs) deliveryLatency.observe(labels, Math.max(0, ms) / 1000);
  }

  feedAnswered(mode: FeedMode, status: number | undefined): void {
    const statusClass = status === undefined ? 'aborted' : `${Math.floor(status / 100)}xx`;
    this.all.series.feedRequests.inc({ tenant: this.tenant, mode, status_class: statusClass });
  }

  feedStreamOpened(): void {
    this.all.series.feedStreams.inc({ tenant: this.tenant });
  }

  feedStreamClosed(): void {
    this.all.series.feedStreams.dec({ tenant: this.tenant });
  }

  feedEventsServed(mode: FeedMode, count: number): void {
    if (count > 0) this.all.series.feedEventsServed.inc({ tenant: this.tenant, mode }, count);
  }
}

/** A tenant's runtime as one scrape shows it, each part asked the first time a gauge needs it. */
interface RuntimeView {
  schedule?: ScheduleSnapshot | undefined;
  sinks?: readonly SinkMetricState[] | undefined;
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

/** What the watermark and coverage gauges show of one kind of a tenant's watched logs. */
interface LogKindGauges {
  /** The oldest cursor among its active logs that have one. */
  oldestWindowEnd: number | undefined;
  /** Its logs disabled, gone or failing every poll. */
  gaps: number;
}

/** Every kind, with no gap and no cursor unless the store counted logs of it. */
function logKindGauges(coverage: readonly LogKindCoverage[]): Map<LogKind, LogKindGauges> {
  const kinds = new Map<LogKind, LogKindGauges>(LOG_KINDS.map((log) => [log, { oldestWindowEnd: undefined, gaps: 0 }]));
  for (const c of coverage)
    if (kinds.has(c.log)) kinds.set(c.log, { oldestWindowEnd: c.oldestActiveWindowEnd ?? undefined, gaps: c.gaps });
  return kinds;
}
