import { cpSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
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
  type OwningTest,
  type ReplicaSet,
  type ReplicaView,
} from './replicaHarness.js';
import { rendezvousWeight } from '../../src/cluster/leaseAssignment.js';
import type { Simulator } from '../../src/simulator/index.js';
import { deliveredEvents } from '../support/daemonHarness.js';
import { writeTenantFile } from '../support/tenantFile.js';

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

/**
 * Two replicas serving four companies, every entry of a first round delivered, closed when `test`
 * finishes. `views` gives a replica a tenants directory of its own; `only` starts just those replicas.
 */
async function servedCompanies(
  test: OwningTest,
  seed: number,
  options: {
    views?: (set: ReplicaSet) => Record<string, ReplicaView>;
    only?: string[];
    forgetAfterSeconds?: number;
  } = {},
): Promise<{ set: ReplicaSet; simulator: Simulator; companies: string[] }> {
  const simulator = await simulatedCompanies(seed, COMPANIES, test);
  const set = startReplicaSet(
    admin!,
    simulator,
    {
      leaseSeconds: LEASE_SECONDS,
      companies: COMPANIES,
      readsPerHour: 14_400,
      ...(options.forgetAfterSeconds === undefined ? {} : { forgetAfterSeconds: options.forgetAfterSeconds }),
    },
    test,
  );
  const companies = Array.from({ length: COMPANIES }, (_, i) => set.tenantName(i));
  const views = options.views?.(set) ?? {};
  for (const id of options.only ?? REPLICAS) set.start(id, {}, views[id]);
  await everyCompanyHeld(set, companies);
  writeRound(simulator);
  await everythingDelivered(set, simulator);
  return { set, simulator, companies };
}

// Concurrent: each test has a simulator, a schema and directories of its own, and spends most of
// its time waiting for lease rounds (two seconds each) and restarts, which the others fill.
describe.skipIf(!admin).concurrent('replicas agree on the tenants whatever their history', () => {
  it('a copy of a key, first by name, then a replica restarted: one tenant polls the key, every company is held, nothing replayed into the copy', async (test) => {
    const { set, simulator, companies } = await servedCompanies(test, 77);
    // The restarted replica never saw company 0 running, and must still not give the key to the copy.
    set.writeTenantFileAs(COPY, 0);
    await everyReplicaLogged(set, 'the copy refused', `"tenant":"${COPY}"`, 'same API key');
    await restart(set, 'replica-b');
    await everyCompanyHeld(set, companies);
    writeRound(simulator);
    await everythingDelivered(set, simulator);
    const settledAt = Date.now();
    await until(() => Date.now() > settledAt + 3_000, 10_000, 'three seconds of polling');
    const recent = simulator.requests.filter((r) => r.company === 0 && r.at > settledAt);
    expect(new Set(recent.map((r) => r.instanceId)).size).toBe(1);
    expect([...(await set.holders()).keys()]).not.toContain(COPY);
    // Left alone, the restarted replica serves every company, company 0 by its own tenant.
    await stop(set, 'replica-a');
    await everyCompanyHeld(set, companies);
    writeRound(simulator);
    await everythingDelivered(set, simulator);
    expect(sinkEvents(set, COPY)).toBe(0);
  }, 300_000);

  it('a file turned invalid, then its holder restarted: the company is still served on its last valid configuration', async (test) => {
    const { set, simulator, companies } = await servedCompanies(test, 78);
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

  it('a renamed file is refused and replays nothing; named back, the tenant carries on', async (test) => {
    const { set, simulator, companies } = await servedCompanies(test, 79);
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

  it('one replica’s tenants directory emptied, then that replica restarted: the records survive, every company is held, an invalid file runs on its last valid configuration', async (test) => {
    const emptied = 'replica-a';
    const { set, simulator, companies } = await servedCompanies(test, 80, {
      views: (set) => ({ [emptied]: { tenantsDir: copyOfTenants(set, emptied) } }),
    });
    const own = join(set.dir, `tenants-${emptied}`);
    const invalid = set.tenantName(1);
    for (const dir of [set.tenantsDir, own]) writeFileSync(join(dir, `${invalid}.yaml`), 'api: { apiKey: [\n');
    await everyReplicaLogged(set, 'the invalid file', `"tenant":"${invalid}"`, 'last valid configuration');

    // A ConfigMap gone empty on one replica: its read finds no tenant file at all.
    for (const file of readdirSync(own)) rmSync(join(own, file));
    const replica = set.replicas.get(emptied)!;
    await until(
      () => replica.logs().includes('holds no tenant file') || replica.logs().includes('"removed":["'),
      30_000,
      `${emptied} to read its emptied directory`,
    );
    expect(await recordedTenants(set)).toEqual(companies);
    await everyCompanyHeld(set, companies);
    writeRound(simulator);
    await everythingDelivered(set, simulator);

    // Restarted on the empty directory, it knows no tenant: it must not take a share it cannot run.
    await stop(set, emptied);
    const restarted = set.start(emptied, {}, { tenantsDir: own });
    await restarted.waitForLog('"msg":"changefeed running"', 60_000);
    await restarted.waitForLog('not counted in the lease deal', 30_000);
    await until(
      async () => !(await liveInstances(set)).includes(emptied) && (await liveInstances(set)).length === 1,
      30_000,
      `${emptied} to sit the lease deal out`,
    );
    await everyCompanyHeld(set, companies);
    writeRound(simulator);
    await everythingDelivered(set, simulator);
    expect(await recordedTenants(set)).toEqual(companies);
    expect([...new Set((await set.holders()).values())]).toEqual(REPLICAS.filter((id) => id !== emptied));
  }, 300_000);

  it('a key moved from tenant A to tenant B while one replica has not read the directory again: A and B are never leased at once', async (test) => {
    const stale = 'replica-a';
    const fresh = 'replica-b';
    // The stale replica reads a directory of its own, which never changes, once an hour.
    const { set, companies } = await servedCompanies(test, 81, {
      views: (set) => ({ [stale]: { tenantsDir: copyOfTenants(set, stale), rescanSeconds: 3600 } }),
      only: [stale],
      forgetAfterSeconds: 2,
    });
    // A: the company the stale replica ranks highest, so it keeps it when the other joins and
    // hands over its surplus (the lowest ranked).
    const company = [0, 1, 2, 3].sort(
      (x, y) => rendezvousWeight(set.tenantName(y), stale) - rendezvousWeight(set.tenantName(x), stale),
    )[0]!;
    const moved = set.tenantName(company);
    // B: named to come first in the deal, and to rank the fresh replica above the stale one, so
    // the fresh replica deals B to itself while the stale one still holds A.
    const B = Array.from({ length: 100 }, (_, i) => `b-moved-${i}`).find(
      (name) => rendezvousWeight(name, fresh) > rendezvousWeight(name, stale),
    )!;
    // A's file removed from the directory of the replica about to start; forgotten after 2 s.
    set.removeTenantFile(company);
    set.start(fresh);
    await until(async () => !(await recordedTenants(set)).includes(moved), 60_000, `the record of ${moved} forgotten`);
    // The stale replica has handed its surplus over, and kept A.
    await until(
      async () => {
        const holders = [...(await set.holders()).values()];
        return holders.includes(fresh) && (await set.holders()).get(moved) === stale;
      },
      60_000,
      `${fresh} to hold tenants, ${stale} to keep ${moved}`,
    );
    const overlaps: string[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const held = await set.holders();
        if (held.has(moved) && held.has(B)) overlaps.push(`${moved}@${held.get(moved)} ${B}@${held.get(B)}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    try {
      set.writeTenantFileAs(B, company);
      await set.replicas.get(fresh)!.waitForLog(`"added":["${B}"]`, 30_000);
      // Several lease rounds (2 s each) of the fresh replica, which deals B to itself.
      const addedAt = Date.now();
      await until(() => Date.now() > addedAt + 6_000, 20_000, 'three lease rounds');
      expect(await leasesOverlapped(set, moved, B)).toBe(false);
      // The stale replica stops (releasing A): B is taken, the others stay held.
      await stop(set, stale);
      await everyCompanyHeld(set, [...companies.filter((name) => name !== moved), B].sort());
    } finally {
      sampling = false;
      await sampler;
    }
    expect(overlaps).toEqual([]);
    expect(await leasesOverlapped(set, moved, B)).toBe(false);
  }, 300_000);

  it('one tenant’s file differs on one replica (another sink): the other replica says so, and the record is not rewritten at every read', async (test) => {
    const odd = 'replica-a';
    const { set, simulator } = await servedCompanies(test, 82, {
      views: (set) => ({ [odd]: { tenantsDir: copyOfTenants(set, odd) } }),
    });
    const company = set.tenantName(0);
    // The odd replica's copy sends company 0 elsewhere: a mount or a ConfigMap not the others'.
    writeTenantFile(join(set.dir, `tenants-${odd}`), company, {
      apiKey: simulator.companies[0]!.apiKey,
      sinkPath: join(set.dir, 'elsewhere.jsonl'),
    });
    const other = set.replicas.get(REPLICAS.find((id) => id !== odd)!)!;
    await until(
      () =>
        other
          .logs()
          .split('\n')
          .some((l) => l.includes(`"tenant":"${company}"`) && l.includes('another replica reads another file')),
      30_000,
      `the other replica to say that ${company}'s file differs`,
    );
    // Both replicas read their directories every second: the record stays as the odd one wrote it.
    const recordedAt = async (): Promise<string> => {
      const { rows } = await admin!.query<{ at: string }>(
        `SELECT recorded_at::text AS at FROM "${set.schema}".changefeed_tenant_records WHERE tenant = $1`,
        [company],
      );
      return rows[0]!.at;
    };
    const first = await recordedAt();
    const seenAt = Date.now();
    await until(() => Date.now() > seenAt + 3_000, 10_000, 'three reads of each directory');
    expect(await recordedAt()).toBe(first);
  }, 300_000);
});

/** A copy of the set's tenants directory for `id` alone, at `<dir>/tenants-<id>`. */
function copyOfTenants(set: ReplicaSet, id: string): string {
  const own = join(set.dir, `tenants-${id}`);
  cpSync(set.tenantsDir, own, { recursive: true });
  return own;
}

async function recordedTenants(set: ReplicaSet): Promise<string[]> {
  const { rows } = await admin!.query<{ tenant: string }>(
    `SELECT tenant FROM "${set.schema}".changefeed_tenant_records ORDER BY tenant`,
  );
  return rows.map((r) => r.tenant);
}

async function liveInstances(set: ReplicaSet): Promise<string[]> {
  const { rows } = await admin!.query<{ instance_id: string }>(
    `SELECT instance_id FROM "${set.schema}".changefeed_instances
      WHERE heartbeat_at > clock_timestamp() - interval '${LEASE_SECONDS} seconds' ORDER BY instance_id`,
  );
  return rows.map((r) => r.instance_id);
}

/**
 * Whether `b` was acquired while `a`'s lease was valid, from the lease rows: a release sets
 * `expires_at` to its time, so `a` covered `b`'s acquisition if acquired before it and expiring
 * (or released) after it.
 */
async function leasesOverlapped(set: ReplicaSet, a: string, b: string): Promise<boolean> {
  const { rows } = await admin!.query<{ overlapped: boolean }>(
    `SELECT (x.acquired_at < y.acquired_at AND x.expires_at > y.acquired_at) AS overlapped
       FROM "${set.schema}".changefeed_leases x, "${set.schema}".changefeed_leases y
      WHERE x.tenant = $1 AND y.tenant = $2 AND y.acquired_at IS NOT NULL`,
    [a, b],
  );
  return rows.some((r) => r.overlapped);
}
