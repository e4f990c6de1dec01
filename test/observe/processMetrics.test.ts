import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { ProcessMetrics } from '../../src/observe/processMetrics.js';
import type { TenantMetricSource } from '../../src/observe/changefeedMetrics.js';
import type { ChangefeedStore } from '../../src/store/changefeedStore.js';
import { SqliteStoreBackend } from '../../src/store/sqlite/sqliteStoreBackend.js';
import { StoreActivity } from '../../src/store/storeActivity.js';
import { CHANGEFEED_VERSION } from '../../src/version.js';
import { storeConfigSchema } from '../../src/store/storeConfig.js';
import { sampleValue } from '../support/metricsText.js';
import { makeTempDir } from '../support/tempDir.js';
import { entry, ingest, T, watchOne } from '../store/contract/storeFixtures.js';

/** A tenant whose store answers with one sink and `pending` events, or refuses every read. */
function source(pending: number | 'refused'): TenantMetricSource {
  const refuse = () => Promise.reject(new Error('the store refused'));
  const store = {
    sinks: { list: pending === 'refused' ? refuse : () => Promise.resolve([{ name: 'hook', active: true }]) },
    outbox: {
      counts:
        pending === 'refused'
          ? refuse
          : () => Promise.resolve({ pending, delivered: 0, dead: 0, filtered: 0, oldestPendingIngestedAt: 1_000 }),
    },
    watchedLogs: { coverage: pending === 'refused' ? refuse : () => Promise.resolve([]) },
  } as unknown as ChangefeedStore;
  return {
    store,
    now: () => 61_000,
    allowancePerHour: () => 100,
    sinks: () => [{ sink: 'hook', disabled: false, circuit: 'open', disconnectedSince: 0, failingSince: null }],
  };
}

/** A full collection, as `node --expose-gc` offers it, from within the test. */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

describe('the process metrics', () => {
  it('counters of a tenant go on across runtimes; gauges follow the runtime attached now', async () => {
    const metrics = new ProcessMetrics();
    const first = metrics.tenants.forTenant('acme');
    const firstSource = source(3);
    first.attach(firstSource);
    first.observeDelivery({ sink: 'hook', delivered: 2, retried: 0, dead: 0, latenciesMs: [] });
    let text = await metrics.metrics();
    expect(sampleValue(text, 'changefeed_outbox_pending', { tenant: 'acme', sink: 'hook' })).toBe(3);
    expect(sampleValue(text, 'changefeed_sink_oldest_pending_age_seconds', { tenant: 'acme' })).toBe(60);
    expect(sampleValue(text, 'changefeed_sink_circuit_state', { tenant: 'acme', state: 'open' })).toBe(1);
    expect(sampleValue(text, 'changefeed_sink_connected', { tenant: 'acme' })).toBe(0);
    expect(sampleValue(text, 'changefeed_build_info', { version: CHANGEFEED_VERSION })).toBe(1);

    // A restart: the new runtime attaches before the old one's late detach, which must not drop it.
    const second = metrics.tenants.forTenant('acme');
    second.attach(source(5));
    first.detach(firstSource);
    second.observeDelivery({ sink: 'hook', delivered: 1, retried: 0, dead: 0, latenciesMs: [] });
    text = await metrics.metrics();
    expect(sampleValue(text, 'changefeed_outbox_pending', { tenant: 'acme' })).toBe(5);
    expect(sampleValue(text, 'changefeed_deliveries_total', { tenant: 'acme', outcome: 'delivered' })).toBe(3);
  });

  it('a tenant whose store refuses is left out of the scrape; the rest of /metrics still answers', async () => {
    const metrics = new ProcessMetrics();
    metrics.tenants.forTenant('broken').attach(source('refused'));
    metrics.tenants.forTenant('fine').attach(source(1));
    const text = await metrics.metrics();
    expect(sampleValue(text, 'changefeed_outbox_pending', { tenant: 'fine' })).toBe(1);
    expect(sampleValue(text, 'changefeed_outbox_pending', { tenant: 'broken' })).toBeUndefined();
    expect(sampleValue(text, 'process_cpu_seconds_total')).toBeGreaterThan(0);
  });

  it('the budget left of a tenant that stopped here leaves /metrics: an exhausted one would page for ever', async () => {
    const metrics = new ProcessMetrics();
    const acme = metrics.tenants.forTenant('acme');
    const acmeSource = source(0);
    acme.attach(acmeSource);
    const meta = { status: 200, remaining: 0 } as Parameters<typeof acme.observeResponse>[0];
    acme.observeResponse(meta, '/api/v1/identity-provider-events');
    expect(sampleValue(await metrics.metrics(), 'changefeed_budget_remaining', { tenant: 'acme' })).toBe(0);

    // Handed over to another replica (or removed): its alert must not go on firing from here.
    acme.detach(acmeSource);
    expect(sampleValue(await metrics.metrics(), 'changefeed_budget_remaining', { tenant: 'acme' })).toBeUndefined();
    // A poll that was in flight answers after the detach: still not exported.
    acme.observeResponse(meta, '/api/v1/identity-provider-events');
    expect(sampleValue(await metrics.metrics(), 'changefeed_budget_remaining', { tenant: 'acme' })).toBeUndefined();

    // Back here: its next answer shows again.
    const again = metrics.tenants.forTenant('acme');
    again.attach(source(0));
    again.observeResponse({ ...meta, remaining: 7 }, '/api/v1/identity-provider-events');
    expect(sampleValue(await metrics.metrics(), 'changefeed_budget_remaining', { tenant: 'acme' })).toBe(7);
  });

  it("counts the store's transactions and statements on, across a backend opened again", async () => {
    const metrics = new ProcessMetrics();
    const first = new StoreActivity('postgres');
    metrics.store.watch(first);
    first.statementAlone();
    first.transactions += 1;
    first.statements += 4;
    let text = await metrics.metrics();
    expect(sampleValue(text, 'changefeed_store_transactions_total', { engine: 'postgres' })).toBe(2);
    expect(sampleValue(text, 'changefeed_store_statements_total', { engine: 'postgres' })).toBe(5);

    // A reload opens another backend, whose counts start from nothing: the counters go on.
    const second = new StoreActivity('postgres');
    metrics.store.watch(second);
    second.statementAlone();
    text = await metrics.metrics();
    expect(sampleValue(text, 'changefeed_store_transactions_total', { engine: 'postgres' })).toBe(3);
    expect(sampleValue(text, 'changefeed_store_statements_total', { engine: 'postgres' })).toBe(6);
  });

  it("reads each tenant's sinks, watched logs and each sink's counts once per scrape, and afresh at the next", async () => {
    const backend = new SqliteStoreBackend({ stateDir: makeTempDir(), store: storeConfigSchema.parse({}) });
    try {
      const metrics = new ProcessMetrics();
      const stores: ChangefeedStore[] = [];
      for (const tenant of ['t-1', 't-2', 't-3']) {
        const store = await backend.tenantStore(tenant);
        await watchOne(store, 'career', 'c-1', T);
        metrics.tenants.forTenant(tenant).attach({ store, now: () => T, allowancePerHour: () => 100 });
        stores.push(store);
      }
      const scrape = async () => {
        const before = backend.activity.statements;
        const text = await metrics.metrics();
        return { text, statements: backend.activity.statements - before };
      };
      // Per tenant its sinks and the one sink's counts; the watched logs of all three in one
      // statement (five gauges read these).
      let { text, statements } = await scrape();
      expect(statements).toBe(2 * 3 + 1);
      expect(sampleValue(text, 'changefeed_outbox_pending', { tenant: 't-1', sink: 'a' })).toBe(0);
      expect(sampleValue(text, 'changefeed_coverage_gaps', { tenant: 't-1', log: 'career' })).toBe(0);

      await ingest(stores[0]!, [entry('e-1')]);
      ({ text, statements } = await scrape());
      expect(statements).toBe(2 * 3 + 1);
      expect(sampleValue(text, 'changefeed_outbox_pending', { tenant: 't-1', sink: 'a' })).toBe(1);
      expect(sampleValue(text, 'changefeed_watermark_age_seconds', { tenant: 't-1', log: 'career' })).toBe(0);
    } finally {
      await backend.close();
    }
  });

  it("keeps none of the tenants' rows it read once the scrape has answered", async () => {
    const metrics = new ProcessMetrics();
    const rowsRead: WeakRef<object>[] = [];
    for (const tenant of ['t-1', 't-2']) {
      const store = {
        sinks: { list: () => Promise.resolve([{ name: 'hook', active: true }]) },
        outbox: {
          counts: () =>
            Promise.resolve({ pending: 0, delivered: 0, dead: 0, filtered: 0, oldestPendingIngestedAt: null }),
        },
        watchedLogs: {
          coverage: () => {
            const rows = [{ log: 'career', gaps: 0, oldestActiveWindowEnd: 1_000 }];
            rowsRead.push(new WeakRef(rows));
            return Promise.resolve(rows);
          },
        },
      } as unknown as ChangefeedStore;
      metrics.tenants.forTenant(tenant).attach({ store, now: () => 61_000, allowancePerHour: () => 100 });
    }
    const text = await metrics.metrics();
    expect(sampleValue(text, 'changefeed_watermark_age_seconds', { tenant: 't-2', log: 'career' })).toBe(60);
    expect(rowsRead).toHaveLength(2);
    // A WeakRef holds its target until the task that made it ends.
    await new Promise((resolve) => setImmediate(resolve));
    collectGarbage();
    // At 5,000 tenants a scrape's reads were 130,000 watched-log rows, held until the next scrape.
    expect(rowsRead.map((ref) => ref.deref() === undefined)).toEqual([true, true]);
  });

  it('renders the exposition a metric at a time, each after the part before it was taken', async () => {
    const metrics = new ProcessMetrics();
    let storeReads = 0;
    const counted = source(2);
    const counts = counted.store.outbox.counts.bind(counted.store.outbox);
    counted.store.outbox.counts = (sink) => {
      storeReads += 1;
      return counts(sink);
    };
    metrics.tenants.forTenant('acme').attach(counted);
    const parts: string[] = [];
    let takeFirst: () => void = () => undefined;
    const written = metrics.write((part) => {
      parts.push(part);
      return parts.length === 1 ? new Promise((resolve) => (takeFirst = resolve)) : Promise.resolve();
    });
    for (let turn = 0; turn < 10; turn++) await new Promise((resolve) => setImmediate(resolve));
    // The first part is not taken yet: no other metric was rendered, none read a store.
    expect(parts).toHaveLength(1);
    expect(storeReads).toBe(0);
    takeFirst();
    await written;
    expect(parts).toHaveLength(metrics.registry.getMetricsAsArray().length);
    expect(storeReads).toBe(1);
    const text = parts.join('');
    expect(sampleValue(text, 'changefeed_outbox_pending', { tenant: 'acme', sink: 'hook' })).toBe(2);
    expect(text.endsWith('\n') && !text.endsWith('\n\n')).toBe(true);
  });

  // Each scrape's gauge was reset when it began reading and set as each tenant's read came back:
  // a scrape that began meanwhile reset it again, and the first answered without the tenants it
  // had set before that (17 of 20 tenants' outbox gauges with five overlapping scrapes).
  it('answers every tenant in each of two overlapping scrapes, whichever reads come back first', async () => {
    const metrics = new ProcessMetrics();
    // Each read of a tenant's outbox counts waits until the test lets it answer.
    const reads: { tenant: string; answer: () => void }[] = [];
    let readArrived: () => void = () => undefined;
    const gated = (tenant: string): TenantMetricSource => {
      const tenantSource = source(1);
      const counts = tenantSource.store.outbox.counts.bind(tenantSource.store.outbox);
      tenantSource.store.outbox.counts = (sink) =>
        new Promise<void>((resolve) => {
          reads.push({ tenant, answer: resolve });
          readArrived();
        }).then(() => counts(sink));
      return tenantSource;
    };
    const readsReach = (count: number): Promise<void> =>
      new Promise((resolve) => {
        readArrived = () => {
          if (reads.length >= count) resolve();
        };
        readArrived();
      });
    const answer = (index: number): Promise<void> => {
      reads[index]?.answer();
      return new Promise((resolve) => setImmediate(resolve));
    };
    metrics.tenants.forTenant('fast').attach(gated('fast'));
    metrics.tenants.forTenant('slow').attach(gated('slow'));

    const first = metrics.metrics();
    await readsReach(2);
    await answer(reads.findIndex((r) => r.tenant === 'fast'));
    const second = metrics.metrics();
    await readsReach(4);
    await answer(reads.findIndex((r) => r.tenant === 'slow'));
    for (let i = 2; i < 4; i++) await answer(i);

    for (const text of await Promise.all([first, second])) {
      expect(sampleValue(text, 'changefeed_outbox_pending', { tenant: 'fast' })).toBe(1);
      expect(sampleValue(text, 'changefeed_outbox_pending', { tenant: 'slow' })).toBe(1);
    }
  });
});
