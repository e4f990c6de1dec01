import { Gauge, Registry, collectDefaultMetrics, type Metric } from 'prom-client';
import { CHANGEFEED_VERSION } from '../version.js';
import { ChangefeedMetrics } from './changefeedMetrics.js';
import { FeedRouterMetrics } from './feedRouterMetrics.js';
import { LeaseMetrics } from './leaseMetrics.js';
import { MetricText } from './metricText.js';
import { StoreMetrics } from './storeMetrics.js';

const GAUGES_NAMED_AS_COUNTERS = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

/** The tenants of the daemon serving now. */
export interface TenantCountView {
  running(): number;
  failed(): number;
}

/**
 * /metrics of the whole process, in one registry that lives as long as the process: a SIGHUP
 * builds a new daemon around the same ProcessMetrics, so no counter resets. Holds Node's and the
 * process's own metrics under their standard names (`process_cpu_seconds_total`,
 * `nodejs_heap_size_used_bytes`, ...), `changefeed_build_info`, the tenants, the leases, the feed
 * router's own answers, the store's transactions and statements, and every tenant's series (labelled `tenant`).
 */
export class ProcessMetrics {
  readonly contentType = Registry.PROMETHEUS_CONTENT_TYPE;
  readonly registry = new Registry();
  readonly tenants: ChangefeedMetrics;
  readonly leases: LeaseMetrics;
  readonly feedRouter: FeedRouterMetrics;
  readonly store: StoreMetrics;
  private view: TenantCountView | undefined;
  private readonly text = new MetricText();

  constructor() {
    const registers = [this.registry];
    new Gauge({
      name: 'changefeed_build_info',
      help: 'Always 1; the version of changefeed running, as a label.',
      labelNames: ['version'],
      registers,
    }).set({ version: CHANGEFEED_VERSION }, 1);
    const view = () => this.view;
    new Gauge({
      name: 'changefeed_tenants',
      help: 'Tenants of this process, by state: running here, or failed to start (see the logs).',
      labelNames: ['state'],
      registers,
      collect() {
        this.set({ state: 'running' }, view()?.running() ?? 0);
        this.set({ state: 'failed' }, view()?.failed() ?? 0);
      },
    });
    this.tenants = new ChangefeedMetrics(this.registry);
    this.leases = new LeaseMetrics(this.registry);
    this.feedRouter = new FeedRouterMetrics(this.registry);
    this.store = new StoreMetrics(this.registry);
  }

  /** The daemon serving now (one at a time: a reload replaces it). */
  watch(view: TenantCountView | undefined): void {
    this.view = view;
  }

  /** Every series now, as one Prometheus text exposition. */
  metrics(): Promise<string> {
    return wholeExposition(this);
  }

  /**
   * Every series now, as `metrics()` renders them, one metric at a time: each part is rendered
   * after `write` has taken the one before, so a scrape holds one metric's series at a time, not
   * all of them (docs/scaling.md).
   */
  async write(write: (part: string) => Promise<void>): Promise<void> {
    this.collectProcessMetrics();
    await this.tenants.scraping(async () => {
      // prom-client's typings call these MetricObjects; the array holds the metrics themselves.
      const metrics = this.registry.getMetricsAsArray() as unknown as Metric[];
      for (const [i, metric] of metrics.entries()) {
        const text = await this.text.render(metric);
        await write(i < metrics.length - 1 ? `${text}\n\n` : `${text}\n`);
      }
    });
  }

  private processMetricsCollected = false;
  /**
   * Node's and the process's metrics, from the first scrape on: they start a GC observer and an
   * event-loop monitor, which a daemon nobody scrapes (run --once, tests) need not carry.
   */
  private collectProcessMetrics(): void {
    if (this.processMetricsCollected) return;
    this.processMetricsCollected = true;
    collectDefaultMetrics({ register: this.registry });
    // Gauges named like counters (promtool refuses them); each is the sum of its family without
    // `_total` (nodejs_active_handles by type, ...), which stays.
    for (const name of GAUGES_NAMED_AS_COUNTERS) this.registry.removeSingleMetric(name);
  }
}

/** What a source that writes its exposition a part at a time (ProcessMetrics.write) writes, whole. */
export async function wholeExposition(source: {
  write(write: (part: string) => Promise<void>): Promise<void>;
}): Promise<string> {
  const parts: string[] = [];
  await source.write((part) => {
    parts.push(part);
    return Promise.resolve();
  });
  return parts.join('');
}
