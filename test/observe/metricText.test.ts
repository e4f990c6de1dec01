import { Counter, Gauge, Histogram, Registry, Summary } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { MetricText } from '../../src/observe/metricText.js';
import { ProcessMetrics } from '../../src/observe/processMetrics.js';
import type { ChangefeedStore } from '../../src/store/changefeedStore.js';

/** Each metric of `registry` as prom-client renders it, and as MetricText does. */
async function bothRenderings(registry: Registry): Promise<{ ours: string[]; promClient: string[] }> {
  const text = new MetricText();
  const ours: string[] = [];
  const promClient: string[] = [];
  for (const { name } of registry.getMetricsAsArray()) {
    const metric = registry.getSingleMetric(name)!;
    promClient.push(await registry.getSingleMetricAsString(name));
    ours.push(await text.render(metric));
  }
  return { ours, promClient };
}

describe('the text of a metric', () => {
  it("is prom-client's, byte for byte, for every kind of metric, label and value", async () => {
    const registry = new Registry();
    const registers = [registry];
    const counter = new Counter({
      name: 'c_total',
      help: 'A help with \\ and\nnewline.',
      labelNames: ['tenant', 'sink'],
      registers,
    });
    counter.inc({ tenant: 'plain', sink: 'a' }, 3);
    counter.inc({ tenant: 'quote"back\\slash\nline', sink: 'b' });
    counter.inc({ sink: 'only-sink' }, 0.5);
    // One character needing an escape each: a value holding all three takes the escaping path for
    // any one of them, and would hide another left out of the test that decides whether to escape.
    for (const [tenant, sink] of [
      ['line\nfeed', 'c'],
      ['back\\slash', 'd'],
      ['quote"', 'e'],
    ])
      counter.inc({ tenant, sink });
    new Counter({ name: 'unlabelled_total', help: 'No labels.', registers }).inc(2);
    new Counter({ name: 'never_total', help: 'Never moved.', labelNames: ['tenant'], registers });
    const gauge = new Gauge({ name: 'g', help: 'A gauge.', labelNames: ['tenant', 'state'], registers });
    gauge.set({ tenant: 't', state: 'half_open' }, Number.NaN);
    gauge.set({ tenant: 't', state: 'open' }, Number.POSITIVE_INFINITY);
    gauge.set({ tenant: 't', state: 'closed' }, Number.NEGATIVE_INFINITY);
    gauge.set({ tenant: 'u', state: 'closed' }, -1.25e-7);
    const histogram = new Histogram({
      name: 'h_seconds',
      help: 'A histogram.',
      labelNames: ['tenant', 'log'],
      buckets: [0.5, 1, 10],
      registers,
    });
    histogram.observe({ tenant: 'a"b', log: 'career' }, 0.7);
    histogram.observe({ tenant: 'x', log: 'skill' }, 100);
    histogram.observe({ tenant: 'line\nfeed', log: 'back\\slash' }, 1);
    // A series with no observation yet, and a label value that is a number.
    histogram.zero({ tenant: 'zeroed', log: 'career' });
    gauge.set({ tenant: 'u', state: 7 }, 1);
    new Histogram({ name: 'h_plain_seconds', help: 'Unlabelled.', buckets: [1], registers }).observe(0.25);
    new Summary({
      name: 's_seconds',
      help: 'A summary.',
      labelNames: ['tenant'],
      percentiles: [0.5, 0.9],
      registers,
    }).observe({ tenant: 'x' }, 2);

    const { ours, promClient } = await bothRenderings(registry);
    expect(ours).toEqual(promClient);
    // Twice: the shared labels come from what the first rendering kept.
    expect((await bothRenderings(registry)).ours).toEqual(promClient);
  });

  it("is prom-client's for every metric of the process, tenants' gauges and Node's own included", async () => {
    const metrics = new ProcessMetrics();
    const store = {
      sinks: { list: () => Promise.resolve([{ name: 'hook', active: true }]) },
      outbox: {
        counts: () =>
          Promise.resolve({ pending: 2, delivered: 0, dead: 1, filtered: 0, oldestPendingIngestedAt: 1_000 }),
      },
      watchedLogs: { coverage: () => Promise.resolve([{ log: 'career', gaps: 1, oldestActiveWindowEnd: 1_000 }]) },
    } as unknown as ChangefeedStore;
    const acme = metrics.tenants.forTenant('acme');
    acme.attach({ store, now: () => 61_000, allowancePerHour: () => 100 });
    acme.observeDelivery({ sink: 'hook', delivered: 2, retried: 1, dead: 0, latenciesMs: [30, 4_000] });
    acme.observeResponse({ status: 429, remaining: 0 } as never, '/api/v1/careers');
    await metrics.metrics();

    const { ours, promClient } = await bothRenderings(metrics.registry);
    // Node's own metrics move between two renderings: compared by their lines' names and labels.
    const shape = (texts: string[]) =>
      texts.map((text) =>
        text
          .split('\n')
          .map((line) => (line.startsWith('#') ? line : line.slice(0, line.lastIndexOf(' '))))
          .join('\n'),
      );
    expect(shape(ours)).toEqual(shape(promClient));
    const tenants = (texts: string[]) => texts.filter((t) => t.includes('tenant="acme"'));
    expect(tenants(ours).length).toBeGreaterThan(10);
    expect(tenants(ours)).toEqual(tenants(promClient));
  });
});
