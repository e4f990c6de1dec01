import type pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { LeaseTable } from '../../src/cluster/leaseTable.js';
import { connectLeaseAdmin, createLeaseSchema, type LeaseSchema } from '../support/leaseDatabase.js';
import { KeeperSet, type TestKeeper } from '../support/leaseKeepers.js';

let admin: pg.Client | undefined;
let db: LeaseSchema | undefined;
let set: KeeperSet | undefined;

beforeAll(async () => {
  admin = await connectLeaseAdmin('lease keeper tests');
});
afterEach(async () => {
  const violations = set?.violations ?? [];
  await set?.stopAll();
  await db?.close();
  set = undefined;
  db = undefined;
  expect(violations).toEqual([]);
});
afterAll(async () => {
  await admin?.end();
});

const tenantNames = (n: number): string[] => Array.from({ length: n }, (_, i) => `company-${i + 1}`);

/**
 * A fresh schema and a set of keepers on manual clocks whose every event is checked against the
 * invariants: no tenant writable at two replicas at once, and no epoch of a tenant granted twice.
 */
async function setup(ctx: { skip: (note?: string) => void }): Promise<{ db: LeaseSchema; set: KeeperSet }> {
  if (!admin) ctx.skip('no PostgreSQL');
  db = await createLeaseSchema(admin!);
  const granted = new Map<string, string>();
  set = new KeeperSet((keeper, event) => {
    if (event.type === 'acquired') {
      const key = `${event.tenant}@${event.epoch}`;
      expect(granted.get(key), `epoch ${key} granted twice`).toBeUndefined();
      granted.set(key, keeper.id);
    }
    assertExclusive(set!.keepers, tenantNames(40));
  });
  return { db, set };
}

function assertExclusive(keepers: readonly TestKeeper[], tenants: readonly string[]): void {
  for (const tenant of tenants) {
    const writers = keepers.filter((k) => k.keeper.canWrite(tenant)).map((k) => k.id);
    expect(writers.length, `${tenant} writable at ${writers.join(', ')}`).toBeLessThanOrEqual(1);
  }
}

/** Each keeper's local view agrees with the database: it holds exactly what the table credits it. */
async function assertMatchesDatabase(keepers: readonly TestKeeper[]): Promise<Map<string, number>> {
  const rows = await keepers[0]!.table.list();
  const counts = new Map<string, number>();
  for (const k of keepers) {
    const inDb = rows.filter((r) => r.holder === k.id && r.expiresInMs > 0).map((r) => `${r.tenant}@${r.epoch}`);
    const local = k.keeper.heldLeases().map((l) => `${l.tenant}@${l.epoch}`);
    expect(local, `${k.id} holds what the database says`).toEqual(inDb);
    counts.set(k.id, local.length);
  }
  return counts;
}

const sorted = (counts: Map<string, number>): number[] => [...counts.values()].sort((a, b) => b - a);

describe('LeaseKeeper', () => {
  it('keepers racing for the same tenants never both hold one, and each epoch is granted once', async (ctx) => {
    const { db, set } = await setup(ctx);
    const tenants = tenantNames(40);
    // Started in the same instant, their first snapshots differ (who heartbeated yet, what is
    // taken), so they try to take the same tenants; the database must settle every race.
    const keepers = ['a', 'b', 'c', 'd', 'e'].map((id) => set.add(id, db.pool(), () => tenants));
    const first = keepers.map((k) => k.nextRound());
    for (const k of keepers) k.start();
    await Promise.all(first);
    set.assertNoViolations();
    await set.tickUntil('8 each', () => keepers.every((k) => k.keeper.heldLeases().length === 8));
    expect(sorted(await assertMatchesDatabase(keepers))).toEqual([8, 8, 8, 8, 8]);

    // b restarts under the same name: its successor and the others race for b's freed tenants.
    await keepers[1]!.stop();
    const b2 = set.add('b', db.pool(), () => tenants);
    const next = b2.nextRound();
    b2.start();
    const others = keepers.filter((k) => k.id !== 'b');
    await Promise.all([next, set.tick(others)]);
    await set.tickUntil('8 each again', () => b2.keeper.heldLeases().length === 8);
    expect(sorted(await assertMatchesDatabase([...others, b2]))).toEqual([8, 8, 8, 8, 8]);
  });

  it('a keeper that believes it is alone and everything is free takes nothing another holds', async (ctx) => {
    const { db, set } = await setup(ctx);
    const tenants = tenantNames(20);
    const a = set.add('a', db.pool(), () => tenants);
    const b = set.add('b', db.pool(), () => tenants);
    a.start();
    b.start();
    await set.tickUntil('10 each', () => a.keeper.heldLeases().length === 10 && b.keeper.heldLeases().length === 10);
    // Its view of the table is wrong (no other replica, no lease): it tries to take all 20.
    const blind = set.add('blind', db.pool(), () => tenants, {
      wrapTable: (table) =>
        Object.assign(Object.create(table) as LeaseTable, {
          liveInstances: () => Promise.resolve(['blind']),
          list: () => Promise.resolve([]),
        }),
    });
    blind.start();
    for (let i = 0; i < 4; i++) await set.tick([a, b, blind]);
    // It got only what a and b handed over to it (they see it live); it never took a lease from them.
    const handedOver = [a, b].flatMap((k) => k.events.filter((e) => e.type === 'handOver').map((e) => e.tenant));
    const taken = blind.events.filter((e) => e.type === 'acquired').map((e) => e.tenant);
    expect(taken.length).toBeGreaterThan(0);
    expect(taken.filter((t) => !handedOver.includes(t))).toEqual([]);
    expect(a.count('lost') + b.count('lost')).toBe(0);
    await assertMatchesDatabase([a, b, blind]);
  });

  it('two replicas that each lack a tenant the other holds, both sitting out, still take a free tenant', async (ctx) => {
    const { db, set } = await setup(ctx);
    let viewA = tenantNames(4);
    let viewB = tenantNames(4);
    let recorded = tenantNames(4);
    const a = set.add('a', db.pool(), () => viewA, { recorded: () => recorded });
    const b = set.add('b', db.pool(), () => viewB, { recorded: () => recorded });
    a.start();
    b.start();
    await set.tickUntil('2 each', () => a.keeper.heldLeases().length === 2 && b.keeper.heldLeases().length === 2);
    const heldBy = (k: TestKeeper): string[] => k.keeper.heldLeases().map((l) => l.tenant);
    // Their directories drift apart (a mount that lags): each lacks one of the other's tenants,
    // and both get a new tenant, company-5, that nobody holds yet.
    viewA = [...viewA.filter((t) => t !== heldBy(b)[0]), 'company-5'];
    viewB = [...viewB.filter((t) => t !== heldBy(a)[0]), 'company-5'];
    recorded = tenantNames(5);
    await set.tickUntil('company-5 held', () => [a, b].some((k) => k.keeper.canWrite('company-5')), 6);
    expect(a.keeper.sittingOut ?? b.keeper.sittingOut).toBeDefined();
    expect(a.count('lost') + b.count('lost')).toBe(0);
    await assertMatchesDatabase([a, b]);
  });

  it('spreads 30 tenants over 3 keepers 10/10/10', async (ctx) => {
    const { db, set } = await setup(ctx);
    const tenants = tenantNames(30);
    const keepers = ['a', 'b', 'c'].map((id) => set.add(id, db.pool(), () => tenants));
    for (const k of keepers) k.start();
    await set.tickUntil('10/10/10', () => keepers.every((k) => k.keeper.heldLeases().length === 10));
    expect(sorted(await assertMatchesDatabase(keepers))).toEqual([10, 10, 10]);
  });

  it('a fourth keeper joining gets 7 tenants handed over after draining (8/8/7/7); leaving gives them back', async (ctx) => {
    const { db, set } = await setup(ctx);
    const tenants = tenantNames(30);
    const keepers = ['a', 'b', 'c'].map((id) => set.add(id, db.pool(), () => tenants));
    for (const k of keepers) k.start();
    await set.tickUntil('10/10/10', () => keepers.every((k) => k.keeper.heldLeases().length === 10));
    const before = new Map((await keepers[0]!.table.list()).map((r) => [r.tenant, [r.holder, r.epoch] as const]));
    const eventsBefore = keepers.map((k) => k.events.length);

    const d = set.add('d', db.pool(), () => tenants);
    d.start();
    const four = [...keepers, d];
    await set.tickUntil('8/8/7/7', () => d.keeper.heldLeases().length === 7);
    const counts = await assertMatchesDatabase(four);
    expect(sorted(counts)).toEqual([8, 8, 7, 7]);
    // Exactly the 7 tenants d took moved, each handed over (drained, then released) first.
    const after = await keepers[0]!.table.list();
    const moved = after.filter((r) => r.holder !== before.get(r.tenant)![0]);
    expect(moved.map((r) => r.holder)).toEqual(Array(7).fill('d'));
    const since = keepers.flatMap((k, i) => k.events.slice(eventsBefore[i]));
    const handedOver = since.filter((e) => e.type === 'handOver').map((e) => e.tenant);
    expect(handedOver.sort()).toEqual(moved.map((r) => r.tenant).sort());
    for (const r of moved) expect(r.epoch).toBe(before.get(r.tenant)![1] + 1);
    expect(since.filter((e) => e.type === 'lost' || e.type === 'acquired')).toEqual([]);

    // d leaves cleanly: its 7 tenants go back to the others at once, not after expiry.
    await d.stop();
    await set.tickUntil('10/10/10 again', () => keepers.every((k) => k.keeper.heldLeases().length === 10));
    expect(sorted(await assertMatchesDatabase(keepers))).toEqual([10, 10, 10]);
    expect(d.events.filter((e) => e.type === 'lost').map((e) => e.tenant).length).toBe(7);
  });

  it('follows the tenants configured: a new one is taken, a removed one handed over and forgotten', async (ctx) => {
    const { db, set } = await setup(ctx);
    let tenants = tenantNames(3);
    const a = set.add('a', db.pool(), () => tenants);
    a.start();
    await set.tickUntil('3 held', () => a.keeper.heldLeases().length === 3);
    tenants = ['company-1', 'company-2', 'company-9'];
    await set.tickUntil(
      'company-9 taken, company-3 gone',
      () =>
        a.keeper
          .heldLeases()
          .map((l) => l.tenant)
          .join() === 'company-1,company-2,company-9',
    );
    expect(a.events.filter((e) => e.type === 'handOver').map((e) => e.tenant)).toEqual(['company-3']);
    await set.tick();
    expect((await a.table.list()).map((r) => r.tenant)).toEqual(['company-1', 'company-2', 'company-9']);
  });

  it('a tenant its owner is giving up (its file removed) is not handed over by a round during the drain', async (ctx) => {
    const { db, set } = await setup(ctx);
    let tenants = tenantNames(3);
    const a = set.add('a', db.pool(), () => tenants);
    a.start();
    await set.tickUntil('3 held', () => a.keeper.heldLeases().length === 3);
    // As the daemon applies a removal: the new list and the owner's giving up in one turn, then
    // rounds while the tenant drains.
    tenants = tenantNames(2);
    a.keeper.givingUp('company-3');
    await set.tick();
    await set.tick();
    expect(a.events.filter((e) => e.type === 'handOver')).toEqual([]);
    expect(a.keeper.canWrite('company-3')).toBe(true);
    await a.keeper.release('company-3');
    await set.tick();
    expect((await a.table.list()).map((r) => r.tenant)).toEqual(['company-1', 'company-2']);
  });

  it('a tenant whose file comes back during its drain is neither handed over nor kept: taken anew once released', async (ctx) => {
    const { db, set } = await setup(ctx);
    let tenants = tenantNames(3);
    const a = set.add('a', db.pool(), () => tenants);
    a.start();
    await set.tickUntil('3 held', () => a.keeper.heldLeases().length === 3);
    tenants = tenantNames(2);
    a.keeper.givingUp('company-3');
    await set.tick();
    // Restored (an editor's save as remove-and-create, say) while the removal drains.
    tenants = tenantNames(3);
    await set.tick();
    expect(a.events.filter((e) => e.type === 'handOver')).toEqual([]);
    expect(a.keeper.canWrite('company-3')).toBe(true);
    await a.keeper.release('company-3');
    await set.tickUntil('company-3 taken again', () => a.keeper.canWrite('company-3'));
    expect(a.events.filter((e) => e.type === 'acquired' && e.tenant === 'company-3')).toHaveLength(2);
    expect(a.events.filter((e) => e.type === 'handOver' || e.type === 'lost')).toEqual([]);
  });

  it('a key moved from one tenant to another: the tenant that now has it is taken in the next round', async (ctx) => {
    const { db, set } = await setup(ctx);
    const [k1, k2] = ['k1'.padEnd(64, '0'), 'k2'.padEnd(64, '0')];
    // company-1 polls with k1; then its file gets k2 and company-2's file gets k1.
    let keys = new Map([['company-1', k1]]);
    const a = set.add('a', db.pool(), () => [...keys.keys()], { keyOf: (tenant) => keys.get(tenant) });
    const first = a.nextRound();
    a.start();
    await first;
    expect(a.keeper.heldLeases().map((l) => l.tenant)).toEqual(['company-1']);
    keys = new Map([
      ['company-1', k2],
      ['company-2', k1],
    ]);
    await set.tick();
    // company-1 polls with k2 now: its lease no longer holds k1 from company-2.
    expect(a.keeper.heldLeases().map((l) => l.tenant)).toEqual(['company-1', 'company-2']);
  });
});
