import { afterAll, describe, expect, it } from 'vitest';
import { freePort, until } from '../support/daemonProcess.js';
import { checkMetrics, promtool, sampleValue } from '../support/metricsText.js';
import { connectAdmin, simulatedCompanies, startReplicaSet } from './replicaHarness.js';

const admin = await connectAdmin('lease metrics tests need PostgreSQL');
const LIVENESS_MS = 90_000;

afterAll(async () => {
  await admin?.end();
});

const scrape = async (port: number): Promise<string> =>
  (await fetch(`http://127.0.0.1:${port}/metrics`)
    .then((r) => r.text())
    .catch(() => '')) || '';

describe.skipIf(!admin)('lease metrics of replicas sharing tenants', { timeout: 180_000 }, () => {
  it('a lease acquired shows held=1; a hand-over moves the counters; every tenant is held exactly once', async () => {
    const binary = promtool('promtool check metrics on a replica');
    const simulator = await simulatedCompanies(73, 2);
    const set = startReplicaSet(admin!, simulator, { leaseSeconds: 6, companies: 2 });
    const [a, b] = [set.tenantName(0), set.tenantName(1)];
    const portA = await freePort();
    set.start('replica-a', { CHANGEFEED_HTTP_PORT: String(portA) });
    let textA = '';
    await until(
      async () => {
        textA = await scrape(portA);
        return [a, b].every((tenant) => sampleValue(textA, 'changefeed_lease_held', { tenant }) === 1);
      },
      LIVENESS_MS,
      'replica-a holding both tenants',
    );
    for (const tenant of [a, b]) expect(sampleValue(textA, 'changefeed_lease_acquired_total', { tenant })).toBe(1);
    await until(
      async () =>
        (sampleValue((textA = await scrape(portA)), 'changefeed_lease_renewal_duration_seconds_count') ?? 0) > 0,
      LIVENESS_MS,
      'a lease round measured',
    );
    if (binary) expect(checkMetrics(binary, textA)).toEqual({ status: 0, output: '' });

    // A second replica joins: one tenant is handed over to it, and each is held by exactly one.
    const portB = await freePort();
    set.start('replica-b', { CHANGEFEED_HTTP_PORT: String(portB) });
    let textB = '';
    await until(
      async () => {
        [textA, textB] = [await scrape(portA), await scrape(portB)];
        return (
          sampleValue(textB, 'changefeed_lease_held') === 1 &&
          [a, b].every(
            (tenant) =>
              (sampleValue(textA, 'changefeed_lease_held', { tenant }) ?? 0) +
                (sampleValue(textB, 'changefeed_lease_held', { tenant }) ?? 0) ===
              1,
          )
        );
      },
      LIVENESS_MS,
      'one tenant handed over to replica-b',
    );
    expect(sampleValue(textA, 'changefeed_lease_handed_over_total')).toBe(1);
    expect(sampleValue(textA, 'changefeed_lease_lost_total')).toBeUndefined();
    // Both replicas export every configured tenant: 0 where the other holds it.
    for (const text of [textA, textB])
      for (const tenant of [a, b]) expect(sampleValue(text, 'changefeed_lease_held', { tenant })).not.toBeUndefined();
  });
});
