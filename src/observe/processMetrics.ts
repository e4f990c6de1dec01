import { AggregatorRegistry, Gauge, Registry } from 'prom-client';
import { collectProcessMetrics } from './changefeedMetrics.js';

/**
 * /metrics of the whole process: its own series (memory, CPU, tenants) once, and every running
 * tenant's registry, whose series carry a `tenant` label. prom-client's aggregator merges the
 * registries into one exposition, each metric family declared once.
 */
export class ProcessMetrics {
  readonly contentType = Registry.PROMETHEUS_CONTENT_TYPE;
  private readonly own = new Registry();

  constructor(
    private readonly tenants: () => Iterable<Registry>,
    view: { running: () => number; failed: () => number },
  ) {
    collectProcessMetrics(this.own);
    new Gauge({
      name: 'changefeed_tenants',
      help: 'Tenants of this process, by state: running here, or failed to start (see the logs).',
      labelNames: ['state'],
      registers: [this.own],
      collect() {
        this.set({ state: 'running' }, view.running());
        this.set({ state: 'failed' }, view.failed());
      },
    });
  }

  /** The series every registry holds now, as one Prometheus text exposition. */
  async metrics(): Promise<string> {
    const registries = [this.own, ...this.tenants()];
    const json = await Promise.all(registries.map((r) => r.getMetricsAsJSON()));
    return AggregatorRegistry.aggregate(json).metrics();
  }
}
