import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { until } from '../support/daemonProcess.js';
import {
  connectAdmin,
  deliveredIds,
  everythingDelivered,
  simulatedCompanies,
  startReplicaSet,
  writeRound,
  type ReplicaSet,
} from './replicaHarness.js';
import type { Simulator } from '../../src/simulator/index.js';
import { deliveredEvents } from '../support/daemonHarness.js';

const admin = await connectAdmin('the tenant agreement test of replicas needs PostgreSQL');
const LEASE_SECONDS = 6;
const COMPANIES = 4;
const REPLICAS = ['replica-a', 'replica-b'];
/** Named to come first by name, with company 0's key. */
const COPY = 'a-copy';

afterAll(async () => {
  await admin?.end();
});

/** Stops `id` as an operator would (SIGTERM) and starts it again with the same instance id. */
async function restart(set: ReplicaSet, id: string): Promise<void> {
  await stop(set, id);
  await set.start(id).waitForLog('"msg":"changefeed running"', 60_000);
}

/** Stops `id` as an operator would (SIGTERM): it releases its leases to the others. */
async function stop(set: ReplicaSet, id: string): Promise<void> {
  const replica = set.replicas.get(id)!;
  replica.child.kill('SIGTERM');
  await replica.exited();
  set.replicas.delete(id);
}

/** Every company's tenant leased by some replica, and nothing else. */
async function everyCompanyHeld(set: ReplicaSet, companies: string[]): Promise<void> {
  await until(
    async () => JSON.stringify([...(await set.holders()).keys()].sort()) === JSON.stringify(companies),
    60_000,
    `exactly ${companies.join(', ')} leased`,
  );
}

/** Waits until every running replica has logged a line holding all of `parts`. */
async function everyReplicaLogged(set: ReplicaSet, what: string, ...parts: string[]): Promise<void> {
  await until(
    () =>
      [...set.replicas.values()].every((r) =>
        r
          .logs()
          .split('\n')
          .some((l) => parts.every((p) => l.includes(p))),
      ),
    30_000,
    `every replica to log ${what}`,
  );
}

const sinkEvents = (set: ReplicaSet, name: string): number => {
  try {
    return deliveredEvents(set.dir, `${name}.jsonl`).length;
  } catch {
    return 0;
  }
};

/** Two replicas serving four companies, every entry of a first round delivered. */
async function servedCompanies(seed: number): Promise<{ set: ReplicaSet; simulator: Simulator; companies: string[] }> {
  const simulator = await simulatedCompanies(seed, COMPANIES);
  const set = startReplicaSet(admin!, simulator, {
    leaseSeconds: LEASE_SECONDS,
    companies: COMPANIES,
    readsPerHour: 14_400,
  });
  const companies = Array.from({ length: COMPANIES }, (_, i) => set.tenantName(i));
  for (const id of REPLICAS) set.start(id);
  await everyCompanyHeld(set, companies);
  writeRound(simulator);
  await everythingDelivered(set, simulator);
  return { set, simulator, companies };
}

describe.skipIf(!admin)('replicas agree on the tenants whatever their history', () => {
  it('a copy of a key, first by name, then a replica restarted: one tenant polls the key, every company is held, nothing replayed into the copy', async () => {
    const { set, simulator, companies } = await servedCompanies(77);
    // The restarted replica never saw company 0 running, and must still not give the key to the copy.
    set.writeTenantFileAs(COPY, 0);
    await everyReplicaLogged(set, 'the copy refused', `"tenant":"${COPY}"`, 'same API key');
    await restart(set, 'replica-b');
    await everyCompanyHeld(set, companies);
    writeRound(simulator);
    await everythingDelivered(set, simulator);
    const settledAt = Date.now();
    await until(() => Date.now() > settledAt + 3_000, 10_000, 'three seconds of polling');
    const recent = simulator.instanceRequests.filter((r) => r.company === 0 && r.at > settledAt);
    expect(new Set(recent.map((r) => r.instanceId)).size).toBe(1);
    expect([...(await set.holders()).keys()]).not.toContain(COPY);
    // Left alone, the restarted replica serves every company, company 0 by its own tenant.
    await stop(set, 'replica-a');
    await everyCompanyHeld(set, companies);
    writeRound(simulator);
    await everythingDelivered(set, simulator);
    expect(sinkEvents(set, COPY)).toBe(0);
  }, 300_000);

  it('a file turned invalid, then its holder restarted: the company is still served on its last valid configuration', async () => {
    const { set, simulator, companies } = await servedCompanies(78);
    const invalid = set.tenantName(1);
    writeFileSync(join(set.tenantsDir, `${invalid}.yaml`), 'api: { apiKey: [\n');
    await everyReplicaLogged(set, 'the invalid file', `"tenant":"${invalid}"`, 'last valid configuration');
    const holder = (await set.holders()).get(invalid)!;
    await restart(set, holder);
    await everyCompanyHeld(set, companies);
    // Left alone, the restarted replica, which never read the file valid, serves the company too.
    await stop(
      set,
      REPLICAS.find((id) => id !== holder)!,
    );
    await everyCompanyHeld(set, companies);
    writeRound(simulator);
    await everythingDelivered(set, simulator);
  }, 300_000);

  it('a renamed file is refused and replays nothing; named back, the tenant carries on', async () => {
    const { set, simulator, companies } = await servedCompanies(79);
    const original = set.tenantName(2);
    const renamed = 'renamed-002';
    const before = deliveredIds(set, 2);
    renameSync(join(set.tenantsDir, `${original}.yaml`), join(set.tenantsDir, `${renamed}.yaml`));
    await everyReplicaLogged(set, 'the rename refused', `"tenant":"${renamed}"`, 'whose file is gone');
    expect(deliveredIds(set, 2)).toEqual(before);
    renameSync(join(set.tenantsDir, `${renamed}.yaml`), join(set.tenantsDir, `${original}.yaml`));
    writeRound(simulator);
    await everyCompanyHeld(set, companies);
    await everythingDelivered(set, simulator);
    const delivered = deliveredIds(set, 2);
    expect(delivered.length).toBe(new Set(delivered).size);
    const { rows } = await admin!.query(`SELECT tenant FROM "${set.schema}".changefeed_leases WHERE tenant = $1`, [
      renamed,
    ]);
    expect(rows).toEqual([]);
  }, 300_000);
});
