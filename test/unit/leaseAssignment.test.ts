import { describe, expect, it } from 'vitest';
import {
  assignLeases,
  fairShares,
  tenantsMissingHere,
  type AssignmentSnapshot,
} from '../../src/cluster/leaseAssignment.js';

const names = (prefix: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${prefix}${i + 1}`);
const TENANTS_30 = names('company-', 30);

/** Holders' counts of a lease map, sorted high to low. */
function spread(leases: ReadonlyMap<string, string>, instances: readonly string[]): number[] {
  return instances.map((i) => [...leases.values()].filter((h) => h === i).length).sort((a, b) => b - a);
}

/**
 * Lets every instance decide in turn on the same table and carries the decisions out (a release
 * frees at once, an acquisition succeeds only if the tenant is still free), until nobody wants to
 * change anything. Returns the final leases and how many times a tenant changed hands.
 */
function converge(
  tenants: readonly string[],
  instances: readonly string[],
  start: ReadonlyMap<string, string> = new Map(),
): { leases: Map<string, string>; moves: number; rounds: number } {
  const leases = new Map(start);
  let moves = 0;
  for (let round = 1; round <= 50; round++) {
    let changed = false;
    for (const me of instances) {
      const { acquire, release } = assignLeases({ me, tenants, liveInstances: instances, leases });
      for (const tenant of release) {
        expect(leases.get(tenant), `${me} releases only its own`).toBe(me);
        leases.delete(tenant);
        changed = true;
      }
      for (const tenant of acquire) {
        expect(leases.has(tenant), `${me} is told to take only free tenants`).toBe(false);
        leases.set(tenant, me);
        if (start.has(tenant) && start.get(tenant) !== me) moves++;
        changed = true;
      }
    }
    if (!changed) return { leases, moves, rounds: round };
  }
  throw new Error('the assignment did not converge in 50 rounds');
}

describe('assignLeases', () => {
  it('spreads 30 tenants over 3 replicas 10/10/10, the first decisions already disjoint', () => {
    const instances = ['a', 'b', 'c'];
    const first = instances.map((me) =>
      assignLeases({ me, tenants: TENANTS_30, liveInstances: instances, leases: new Map() }),
    );
    expect(first.map((d) => d.acquire.length)).toEqual([10, 10, 10]);
    expect(new Set(first.flatMap((d) => d.acquire)).size).toBe(30);
    const { leases } = converge(TENANTS_30, instances);
    expect(spread(leases, instances)).toEqual([10, 10, 10]);
  });

  it('a fourth replica joining gets 7 tenants and only those 7 move (8/8/7/7)', () => {
    const before = converge(TENANTS_30, ['a', 'b', 'c']).leases;
    const instances = ['a', 'b', 'c', 'd'];
    const joined = assignLeases({ me: 'd', tenants: TENANTS_30, liveInstances: instances, leases: before });
    expect(joined).toEqual({ acquire: [], release: [] }); // nothing is free yet: the others hand over first
    const releases = ['a', 'b', 'c'].flatMap(
      (me) => assignLeases({ me, tenants: TENANTS_30, liveInstances: instances, leases: before }).release,
    );
    expect(releases).toHaveLength(7);
    const after = converge(TENANTS_30, instances, before);
    expect(spread(after.leases, instances)).toEqual([8, 8, 7, 7]);
    expect(after.moves).toBe(7);
  });

  it('a replica leaving: only its tenants move, to the others, 10/10/10', () => {
    const four = converge(TENANTS_30, ['a', 'b', 'c', 'd']).leases;
    const gone = new Map([...four].filter(([, holder]) => holder !== 'd')); // its leases expired
    const after = converge(TENANTS_30, ['a', 'b', 'c'], gone);
    expect(spread(after.leases, ['a', 'b', 'c'])).toEqual([10, 10, 10]);
    expect(after.moves).toBe(0); // nothing that a, b or c held changed hands
    for (const [tenant, holder] of gone) expect(after.leases.get(tenant)).toBe(holder);
  });

  it('an even spread with the larger shares at the first replicas by id moves nothing', () => {
    const leases = new Map<string, string>();
    const counts = { a: 8, b: 8, c: 7, d: 7 };
    let i = 0;
    for (const [holder, n] of Object.entries(counts)) for (let k = 0; k < n; k++) leases.set(TENANTS_30[i++]!, holder);
    for (const me of Object.keys(counts))
      expect(assignLeases({ me, tenants: TENANTS_30, liveInstances: Object.keys(counts), leases })).toEqual({
        acquire: [],
        release: [],
      });
  });

  it('while tenants are in flight, nobody but the newcomer takes them', () => {
    // b and c handed over their surplus, a not yet: a hands over 2, and only d may take the free 5.
    const instances = ['a', 'b', 'c', 'd'];
    const leases = new Map<string, string>();
    let i = 0;
    for (const [holder, n] of Object.entries({ a: 10, b: 8, c: 7 }))
      for (let k = 0; k < n; k++) leases.set(TENANTS_30[i++]!, holder);
    const decisions = instances.map((me) =>
      assignLeases({ me, tenants: TENANTS_30, liveInstances: instances, leases }),
    );
    expect(decisions.map((d) => [d.acquire.length, d.release.length])).toEqual([
      [0, 2],
      [0, 0],
      [0, 0],
      [5, 0],
    ]);
  });

  const cases: {
    name: string;
    snapshot: AssignmentSnapshot;
    acquire?: number | string[];
    release?: number | string[];
  }[] = [
    {
      name: 'expired leases (absent from the map) are free to take',
      snapshot: { me: 'a', tenants: ['t1', 't2'], liveInstances: ['a'], leases: new Map() },
      acquire: 2,
      release: [],
    },
    {
      name: 'never takes a tenant another live replica holds, even far under its share',
      snapshot: {
        me: 'a',
        tenants: ['t1', 't2'],
        liveInstances: ['a', 'b'],
        leases: new Map([
          ['t1', 'b'],
          ['t2', 'b'],
        ]),
      },
      acquire: [],
      release: [],
    },
    {
      name: 'never takes a tenant validly held by a replica that stopped heartbeating (it waits for expiry)',
      snapshot: { me: 'a', tenants: ['t1'], liveInstances: ['a'], leases: new Map([['t1', 'gone']]) },
      acquire: [],
      release: [],
    },
    {
      name: 'more replicas than tenants: at most one each, the holder of two hands one over',
      snapshot: {
        me: 'a',
        tenants: ['t1', 't2', 't3'],
        liveInstances: ['a', 'b', 'c', 'd', 'e'],
        leases: new Map([
          ['t1', 'a'],
          ['t2', 'a'],
          ['t3', 'b'],
        ]),
      },
      acquire: [],
      release: 1,
    },
    {
      name: 'more replicas than tenants: a replica without any takes nothing the others hold',
      snapshot: {
        me: 'e',
        tenants: ['t1', 't2', 't3'],
        liveInstances: ['a', 'b', 'c', 'd', 'e'],
        leases: new Map([
          ['t1', 'a'],
          ['t2', 'b'],
          ['t3', 'c'],
        ]),
      },
      acquire: [],
      release: [],
    },
    {
      name: 'zero tenants: nothing to do',
      snapshot: { me: 'a', tenants: [], liveInstances: ['a', 'b'], leases: new Map() },
      acquire: [],
      release: [],
    },
    {
      name: 'a tenant no longer configured is handed over',
      snapshot: {
        me: 'a',
        tenants: ['t1'],
        liveInstances: ['a'],
        leases: new Map([
          ['old', 'a'],
          ['t1', 'a'],
        ]),
      },
      acquire: [],
      release: ['old'],
    },
    {
      name: 'duplicate tenants and instances count once',
      snapshot: { me: 'a', tenants: ['t1', 't1', 't2', 't2'], liveInstances: ['a', 'a', 'b', 'b'], leases: new Map() },
      acquire: 1,
      release: [],
    },
    {
      name: 'me counts as live even when its heartbeat is not in the snapshot yet',
      snapshot: { me: 'a', tenants: ['t1', 't2'], liveInstances: ['b'], leases: new Map() },
      acquire: 1,
      release: [],
    },
    {
      name: 'tenants already being handed over are not released twice',
      snapshot: {
        me: 'a',
        tenants: ['t1', 't2', 't3', 't4'],
        liveInstances: ['a', 'b'],
        leases: new Map([
          ['t1', 'a'],
          ['t2', 'a'],
          ['t3', 'a'],
          ['t4', 'a'],
        ]),
        handingOver: new Set(['t1', 't2']),
      },
      acquire: [],
      release: [],
    },
  ];
  it.each(cases)('$name', ({ snapshot, acquire, release }) => {
    const decision = assignLeases(snapshot);
    for (const [got, want] of [
      [decision.acquire, acquire],
      [decision.release, release],
    ] as const) {
      if (typeof want === 'number') expect(got).toHaveLength(want);
      else if (want) expect(got).toEqual(want);
    }
    for (const tenant of decision.acquire) expect(snapshot.leases.has(tenant)).toBe(false);
    for (const tenant of decision.release) expect(snapshot.leases.get(tenant)).toBe(snapshot.me);
  });

  it('rendezvous keeps assignments stable: a join moves about T/N of 300 tenants, a leave only the leaver’s', () => {
    const tenants = names('t', 300);
    const five = names('r', 5);
    const base = converge(tenants, five).leases;
    const joined = converge(tenants, [...five, 'r6'], base);
    expect(spread(joined.leases, [...five, 'r6'])).toEqual([50, 50, 50, 50, 50, 50]);
    expect(joined.moves).toBe(50);
    const left = new Map([...joined.leases].filter(([, h]) => h !== 'r3'));
    const after = converge(tenants, five.filter((r) => r !== 'r3').concat('r6'), left);
    expect(after.moves).toBe(0);
  });
});

describe('fairShares', () => {
  it('gives the larger shares to the first replicas by id, whatever they hold', () => {
    expect(Object.fromEntries(fairShares(30, ['d', 'b', 'c', 'a', 'a']))).toEqual({ a: 8, b: 8, c: 7, d: 7 });
    expect(fairShares(5, [])).toEqual(new Map());
  });
});

describe('tenantsMissingHere', () => {
  const cases: {
    name: string;
    tenants: string[];
    recorded: string[];
    leases: [string, string][];
    missing: string[];
  }[] = [
    {
      name: 'a view with every recorded tenant takes part',
      tenants: ['t1', 't2'],
      recorded: ['t1', 't2'],
      leases: [['t1', 'b']],
      missing: [],
    },
    {
      name: 'an empty view (a replica started on an empty directory) sits out while others run the tenants',
      tenants: [],
      recorded: ['t1', 't2', 't3'],
      leases: [
        ['t1', 'b'],
        ['t3', 'b'],
      ],
      missing: ['t1', 't3'],
    },
    {
      name: 'a recorded tenant nobody holds (its file gone everywhere) keeps nobody out',
      tenants: ['t1'],
      recorded: ['t1', 't2'],
      leases: [],
      missing: [],
    },
    {
      name: 'a recorded tenant held here, though gone from the view, keeps nobody out (this replica stops it)',
      tenants: ['t1'],
      recorded: ['t1', 't2'],
      leases: [['t2', 'a']],
      missing: [],
    },
    {
      name: 'a tenant another replica holds but the store does not record (a stale replica) keeps nobody out',
      tenants: ['t1'],
      recorded: ['t1'],
      leases: [['old', 'b']],
      missing: [],
    },
  ];
  it.each(cases)('$name', ({ tenants, recorded, leases, missing }) => {
    expect(tenantsMissingHere({ me: 'a', tenants, recorded, leases: new Map(leases) })).toEqual(missing);
  });
});
