import { describe, expect, it } from 'vitest';
import type { TenantMetricSource, TenantMetrics } from '../../src/observe/changefeedMetrics.js';
import { ProcessMetrics } from '../../src/observe/processMetrics.js';
import type { ChangefeedStore } from '../../src/store/changefeedStore.js';
import { StoreActivity } from '../../src/store/storeActivity.js';

/** A tenant whose store refuses every read: its gauges are left out, its counters are not. */
const refusing: TenantMetricSource = {
  store: {
    sinks: { list: () => Promise.reject(new Error('pool timeout')) },
    watchedLogs: { coverage: () => Promise.reject(new Error('pool timeout')) },
  } as unknown as ChangefeedStore,
  now: () => 0,
  allowancePerHour: () => 100,
};

/** Each counter-like sample of an exposition (`_total`, and a histogram's `_count` and `_sum`), by series. */
function counterSamples(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line === '') continue;
    const series = line.slice(0, line.lastIndexOf(' '));
    const name = /^[a-z_]+/.exec(series)?.[0] ?? '';
    if (/(_total|_count|_sum)$/.test(name)) samples.set(series, Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return samples;
}

/** A small deterministic generator, so a failure replays. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
}

describe('the counters of /metrics', () => {
  // At 5,000 tenants under load, sums of counters were seen to fall between two scrapes. Within a
  // process no series of a counter may: tenants stopping, starting again and moving leases, the
  // store backend replaced by a reload, stores refusing reads, all while a streamed scrape renders
  // a metric at a time, must leave each series that two scrapes show at least as high in the later.
  it('never shows a series lower than an earlier scrape showed it, whatever tenants and leases do meanwhile', async () => {
    const metrics = new ProcessMetrics();
    const next = random(7);
    const tenants = Array.from({ length: 40 }, (_, i) => `t${i}`);
    const hands = new Map<string, TenantMetrics>();
    let activity = new StoreActivity('postgres');
    metrics.store.watch(activity);
    const step = (): void => {
      const tenant = tenants[Math.floor(next() * tenants.length)]!;
      const roll = next();
      const hand = hands.get(tenant);
      if (hand === undefined || roll < 0.1) {
        // Started (again) here: a new runtime's hand, as a restart or an acquired lease gives.
        const fresh = metrics.tenants.forTenant(tenant);
        fresh.attach(refusing);
        hands.set(tenant, fresh);
        metrics.leases.acquired.inc({ tenant });
      } else if (roll < 0.2) {
        hand.detach(refusing);
        hands.delete(tenant);
        metrics.leases.lost.inc({ tenant });
      } else if (roll < 0.25) {
        activity = new StoreActivity('postgres');
        metrics.store.watch(activity);
      } else {
        hand.observeResponse(
          { status: roll < 0.3 ? 429 : 200, requestId: undefined, limit: 100, remaining: 5, reset: undefined } as never,
          '/v1/careers/c1/activity',
        );
        hand.observePoll(
          'career',
          { result: { emitted: 2, duplicates: 1, quarantined: 0, emittedPerformedAt: [0] } as never },
          1_000,
        );
        // An event ingested on another replica's clock, behind this one's: a negative age.
        hand.observeDelivery({ sink: 'hook', delivered: 1, retried: 1, dead: 0, latenciesMs: [roll < 0.6 ? -40 : 5] });
        activity.statementAlone();
      }
    };
    let previous = new Map<string, number>();
    for (let scrape = 0; scrape < 30; scrape++) {
      for (let i = 0; i < 50; i++) step();
      const parts: string[] = [];
      await metrics.write(async (part) => {
        parts.push(part);
        // The scraper takes each part a while later; tenants and leases move meanwhile.
        for (let i = 0; i < 3; i++) step();
        await new Promise((resolve) => setImmediate(resolve));
      });
      const now = counterSamples(parts.join(''));
      for (const [series, value] of previous) {
        if (now.has(series)) expect(now.get(series), `${series} after scrape ${scrape}`).toBeGreaterThanOrEqual(value);
        // A tenant that stopped keeps its series: nothing counted is taken back.
        else expect.fail(`${series} left /metrics after scrape ${scrape}`);
      }
      previous = now;
    }
    expect(previous.size).toBeGreaterThan(100);
  });
});
