import { afterAll, describe, expect, it } from 'vitest';
import { freePort, until } from '../support/daemonProcess.js';
import { checkMetrics, promtool, sampleValue } from '../support/metricsText.js';
import { connectAdmin, simulatedCompanies, startReplicaSet } from './replicaHarness.js';

const admin = await connectAdmin('lease metrics tests need PostgreSQL');
const LIVENESS_MS = 90_000;
/**
 * The shortest lease (LEASE_SECONDS_MIN), renewed every second: each test waits out lease rounds
 * and, for the locked row, a lease's local deadline. One replica here, so no other holds it up.
 */
const LEASE_SECONDS = 3;

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
    const set = startReplicaSet(admin!, simulator, { leaseSeconds: LEASE_SECONDS, companies: 2 });
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

  it('a lease row held FOR UPDATE by another session: counted and logged, that tenant alone is lost, and taken back once let go', async () => {
    const simulator = await simulatedCompanies(74, 2);
    const set = startReplicaSet(admin!, simulator, { leaseSeconds: LEASE_SECONDS, companies: 2 });
    const [a, b] = [set.tenantName(0), set.tenantName(1)];
    const port = await freePort();
    const replica = set.start('replica-a', { CHANGEFEED_HTTP_PORT: String(port) });
    let text = '';
    const held = async (tenant: string): Promise<boolean> =>
      sampleValue((text = await scrape(port)), 'changefeed_lease_held', { tenant }) === 1;
    await until(
      async () => (await held(a)) && (await held(b)) && replica.logs().split('"msg":"tenant running"').length === 3,
      LIVENESS_MS,
      'replica-a holding and running both tenants',
    );

    // An operator's session left open with a's row locked.
    const session = await admin!.connect();
    try {
      await session.query('BEGIN');
      await session.query(`SELECT 1 FROM "${set.schema}".changefeed_leases WHERE tenant = $1 FOR UPDATE`, [a]);
      await until(
        async () => sampleValue((text = await scrape(port)), 'changefeed_lease_lost_total', { tenant: a }) === 1,
        LIVENESS_MS,
        `tenant ${a} lost at its local deadline`,
      );
      expect(sampleValue(text, 'changefeed_lease_locked_rows_total', { statement: 'renew' })).toBeGreaterThanOrEqual(1);
      expect(replica.logs()).toContain('another transaction holds their rows locked');
      // The other tenant is renewed throughout, and no round failed.
      expect(sampleValue(text, 'changefeed_lease_lost_total', { tenant: b })).toBeUndefined();
      expect(sampleValue(text, 'changefeed_lease_held', { tenant: b })).toBe(1);
      expect(sampleValue(text, 'changefeed_lease_rounds_failed_total') ?? 0).toBe(0);
      // Lost, the lease is renewed no more; the acquisition of the tenant, dealt here again, passes
      // over its row every round, and that is what keeps the lock in sight (ChangefeedLeaseRowsLocked).
      await until(
        async () =>
          (sampleValue((text = await scrape(port)), 'changefeed_lease_locked_rows_total', { statement: 'acquire' }) ??
            0) >= 2,
        LIVENESS_MS,
        `tenant ${a}'s row passed over by the acquisitions`,
      );
      expect(replica.logs()).not.toContain('lease rows no longer met locked');
      // Counted in rounds in a row, whatever the rounds' period (ChangefeedLeaseRowsLocked).
      await until(
        async () => (sampleValue((text = await scrape(port)), 'changefeed_lease_locked_rounds') ?? 0) >= 3,
        LIVENESS_MS,
        'three rounds in a row meeting the locked row',
      );
      await session.query('COMMIT');
    } finally {
      session.release();
    }
    await until(() => held(a), LIVENESS_MS, `tenant ${a} taken back once the session let go`);
    await until(
      async () => sampleValue((text = await scrape(port)), 'changefeed_lease_locked_rounds') === 0,
      LIVENESS_MS,
      'a round meeting no locked row',
    );
    expect(sampleValue(text, 'changefeed_lease_acquired_total', { tenant: a })).toBe(2);
    expect(sampleValue(text, 'changefeed_lease_lost_total', { tenant: b })).toBeUndefined();
  });
});
