import { afterAll, describe, expect, it } from 'vitest';
import { duplicatesOf, expectedEventIds } from '../support/daemonHarness.js';
import { until } from '../support/daemonProcess.js';
import { inProcessCluster, type InProcessReplica } from '../support/inProcessReplicas.js';
import { writeTenantFile } from '../support/tenantFile.js';
import { receiver, SECRET } from '../support/webhookHarness.js';
import { connectAdmin, simulatedCompanies, writeRound } from './replicaHarness.js';

const admin = await connectAdmin('the hand-over drain test needs PostgreSQL');
afterAll(async () => {
  await admin?.end();
});

const TENANTS = ['company-0', 'company-1'];
/** Each log polled about every second, however quiet, so new entries are seen soon by whoever holds the tenant. */
const POLLED_EVERY_SECOND = [
  'budget: { readsPerHour: 14400, reserve: 0 }',
  'watch: { schedule: { policy: round-robin, firstPollWithinSeconds: 0 } }',
];

describe.skipIf(!admin)('a hand-over to a replica that joins', () => {
  it('lets the delivery in flight finish and be acked by the old holder: the new one sends nothing again', async () => {
    const simulator = await simulatedCompanies(72, TENANTS.length);
    /** Event id -> company, of the entries written so far. */
    const companyOf = new Map<string, number>();
    const mapEventIds = (): void =>
      simulator.companies.forEach((company, i) => {
        for (const id of expectedEventIds(company)) companyOf.set(id, i);
      });
    let held: (() => void)[] | undefined;
    const heldFor = new Set<number | undefined>();
    const hook = await receiver({
      respond: (request) => {
        if (!held) return undefined;
        heldFor.add(companyOf.get(request.id));
        const holding = held;
        return new Promise((resolve) => holding.push(() => resolve({ status: 204 })));
      },
    });
    const received = (company: number): string[] =>
      hook.received.map((r) => r.id).filter((id) => companyOf.get(id) === company);

    const cluster = inProcessCluster(admin!, { simulatorUrl: simulator.url, leaseSeconds: 6 });
    TENANTS.forEach((tenant, i) =>
      writeTenantFile(cluster.tenantsDir, tenant, {
        apiKey: simulator.companies[i]!.apiKey,
        sink: `{ name: out, type: webhook, url: "${hook.url}", secret: "${SECRET}" }`,
        lines: POLLED_EVERY_SECOND,
      }),
    );
    const a = await cluster.start('replica-a');
    await until(async () => (await cluster.holders()).size === TENANTS.length, 30_000, 'A holding both tenants');

    // Every request from now on is held until the test lets it go: one batch of each tenant in flight.
    held = [];
    writeRound(simulator);
    mapEventIds();
    await until(() => TENANTS.every((_, i) => heldFor.has(i)), 30_000, 'a delivery of each tenant held in flight');

    // A second replica joins: A hands one tenant over. The held requests are let go once A drains
    // it, or, should A not drain, once B has taken the tenant (the delivery aborted by then).
    let handedOver: string | undefined;
    let letGo = false;
    const release = (): void => {
      letGo = true;
      const waiting = held ?? [];
      held = undefined;
      for (const answer of waiting) answer();
    };
    a.onLog((line) => {
      if (line.msg.startsWith('handing the tenant over')) handedOver = line.tenant;
      if (line.msg.startsWith('tenant stopping') && line.tenant === handedOver) release();
    });
    const b: InProcessReplica = await cluster.start('replica-b');
    b.onLog((line) => {
      if (line.msg === 'lease acquired; tenant starting here' && line.tenant === handedOver) release();
    });
    await until(() => letGo, 60_000, 'the hand-over drained (or the tenant taken by B)');
    const moved = TENANTS.indexOf(handedOver!);
    await until(async () => (await cluster.holders()).get(handedOver!) === 'replica-b', 30_000, 'B holding it');

    writeRound(simulator);
    mapEventIds();
    const missing = (): string[][] =>
      simulator.companies.map((company, i) => {
        const got = new Set(received(i));
        return expectedEventIds(company).filter((id) => !got.has(id));
      });
    await until(() => missing().every((ids) => ids.length === 0), 60_000, 'every entry delivered');
    expect(a.logged('lease lost; tenant stopped here')).toBe(false);
    expect(duplicatesOf(received(moved)), `duplicates in ${handedOver}`).toEqual([]);
    expect(duplicatesOf(received(1 - moved))).toEqual([]);
  }, 120_000);

  it('a tenant file changed while its hand-over drains is not restarted on the old holder', async () => {
    const simulator = await simulatedCompanies(73, TENANTS.length);
    let held: (() => void)[] | undefined;
    const hook = await receiver({
      respond: () => {
        if (!held) return undefined;
        const holding = held;
        return new Promise((resolve) => holding.push(() => resolve({ status: 204 })));
      },
    });
    const cluster = inProcessCluster(admin!, { simulatorUrl: simulator.url, leaseSeconds: 6 });
    const writeFile = (i: number, lines: readonly string[]): void =>
      writeTenantFile(cluster.tenantsDir, TENANTS[i]!, {
        apiKey: simulator.companies[i]!.apiKey,
        sink: `{ name: out, type: webhook, url: "${hook.url}", secret: "${SECRET}" }`,
        lines,
      });
    TENANTS.forEach((_, i) => writeFile(i, POLLED_EVERY_SECOND));
    const a = await cluster.start('replica-a');
    await until(async () => (await cluster.holders()).size === TENANTS.length, 30_000, 'A holding both tenants');
    // A delivery of each tenant held in flight, so that the hand-over's drain lasts.
    held = [];
    writeRound(simulator);
    await until(() => hook.count >= TENANTS.length, 30_000, 'a delivery of each tenant held in flight');

    // B joins; while A drains the tenant it hands over, that tenant's file changes.
    let handedOver: string | undefined;
    let changedSeen = false;
    a.onLog((line) => {
      if (line.msg.startsWith('handing the tenant over')) {
        handedOver = line.tenant;
        writeFile(TENANTS.indexOf(line.tenant!), [...POLLED_EVERY_SECOND, 'journal: { retentionDays: 3 }']);
      }
      if (line.msg === 'tenants changed' && handedOver !== undefined && (line.changed as string[]).includes(handedOver))
        changedSeen = true;
    });
    const b = await cluster.start('replica-b');
    await until(() => changedSeen, 30_000, 'A to read the changed file of the tenant it hands over');
    // The drain ends: the held deliveries answered.
    const waiting = held;
    held = undefined;
    for (const answer of waiting) answer();
    await until(() => b.logged('lease acquired; tenant starting here', handedOver), 30_000, 'B taking the tenant');
    expect(a.logged('tenant did not start; the other tenants go on', handedOver)).toBe(false);
    expect(a.daemon.readiness().filter((c) => c.name === `${handedOver}/start`)).toEqual([]);
  }, 120_000);
});
