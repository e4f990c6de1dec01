/**
 * Which tenants this replica should take and which it should hand over: one pure function of a
 * snapshot of the lease table, so every rule is a row in a table of tests
 * (test/unit/leaseAssignment.test.ts). The keeper gathers the snapshot and carries the answer out.
 *
 * The rules:
 * - Fair shares. With T tenants and N live replicas each replica's share is floor(T/N) or
 *   ceil(T/N); the first T mod N replicas by id get the larger share. The shares depend on the
 *   live set alone, never on who holds what now: shares that followed the holdings would shift
 *   while tenants are in flight, and replicas would hand tenants over and take them back.
 * - Hand over only the surplus. A replica over its share releases the tenants it ranks lowest,
 *   minus those it is already handing over; one within its share never releases.
 * - Take only what is free. A tenant validly leased by another replica is never taken; free
 *   tenants (never leased, released, expired) are dealt out to the replicas under their share,
 *   each to the one ranking it highest (rendezvous hashing). Every replica computes the same
 *   deal from the same snapshot, so they rarely race for a tenant, and the database settles any
 *   race that does happen.
 * - Rendezvous ranking keeps the answer stable: a tenant's preferred replica changes only when
 *   that replica joins or leaves, so a join moves about T/N tenants and a leave moves only the
 *   leaver's.
 */
export interface AssignmentSnapshot {
  /** This replica's id. */
  me: string;
  /** Every configured tenant (duplicates are ignored). */
  tenants: readonly string[];
  /** Replicas heartbeating within the lease duration; `me` counts even if missing. */
  liveInstances: readonly string[];
  /** Valid (unexpired) leases: tenant -> holder. Tenants not in it are free to take. */
  leases: ReadonlyMap<string, string>;
  /** Tenants this replica already announced for hand-over and is draining. */
  handingOver?: ReadonlySet<string>;
}

export interface Assignment {
  /** Free tenants to try to take, most wanted first. */
  acquire: string[];
  /** Tenants to hand over: drain, then release. */
  release: string[];
}

/** Weight of `instance` for `tenant` in rendezvous hashing: FNV-1a, then murmur3's finaliser. */
export function rendezvousWeight(tenant: string, instance: string): number {
  let hash = 0x811c9dc5;
  const key = `${tenant}\u0000${instance}`;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}

/** Higher weight first; ties (astronomically rare) by name, so the order is total. */
function byWeightFor(instance: string): (a: string, b: string) => number {
  return (a, b) => rendezvousWeight(b, instance) - rendezvousWeight(a, instance) || compare(a, b);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Each live replica's fair share: the first T mod N by id get one more. */
export function fairShares(tenantCount: number, liveInstances: Iterable<string>): Map<string, number> {
  const instances = [...new Set(liveInstances)].sort(compare);
  const shares = new Map<string, number>();
  if (instances.length === 0) return shares;
  const base = Math.floor(tenantCount / instances.length);
  const larger = tenantCount % instances.length;
  instances.forEach((instance, index) => shares.set(instance, base + (index < larger ? 1 : 0)));
  return shares;
}

export function assignLeases(snapshot: AssignmentSnapshot): Assignment {
  const { me } = snapshot;
  const tenants = [...new Set(snapshot.tenants)].sort(compare);
  const configured = new Set(tenants);
  const live = new Set(snapshot.liveInstances);
  live.add(me);
  const handingOver = snapshot.handingOver ?? new Set<string>();

  // What each live replica holds of the configured tenants; leases of tenants no longer
  // configured are released by their holder and count for nobody.
  const held = new Map<string, number>([...live].map((instance) => [instance, 0]));
  const mine: string[] = [];
  const unconfigured: string[] = [];
  for (const [tenant, holder] of snapshot.leases) {
    if (!configured.has(tenant)) {
      if (holder === me && !handingOver.has(tenant)) unconfigured.push(tenant);
      continue;
    }
    if (live.has(holder)) held.set(holder, (held.get(holder) ?? 0) + 1);
    if (holder === me) mine.push(tenant);
  }
  const shares = fairShares(tenants.length, live);
  const myShare = shares.get(me) ?? 0;

  const release = unconfigured.sort(compare);
  const surplus = mine.length - myShare - mine.filter((t) => handingOver.has(t)).length;
  if (surplus > 0) {
    const keepable = mine.filter((t) => !handingOver.has(t)).sort(byWeightFor(me));
    release.push(...keepable.slice(keepable.length - surplus).reverse());
  }
  if (mine.length >= myShare) return { acquire: [], release };

  // Deal the free tenants: each goes to the replica under its share that ranks it highest.
  const room = new Map<string, number>();
  for (const [instance, count] of held) {
    const free = (shares.get(instance) ?? 0) - count;
    if (free > 0) room.set(instance, free);
  }
  const acquire: string[] = [];
  for (const tenant of tenants) {
    if (snapshot.leases.has(tenant)) continue;
    let best: string | undefined;
    let bestWeight = -1;
    for (const instance of room.keys()) {
      const weight = rendezvousWeight(tenant, instance);
      if (weight > bestWeight || (weight === bestWeight && best !== undefined && compare(instance, best) < 0)) {
        best = instance;
        bestWeight = weight;
      }
    }
    if (best === undefined) break;
    const left = room.get(best)! - 1;
    if (left === 0) room.delete(best);
    else room.set(best, left);
    if (best === me) acquire.push(tenant);
  }
  return { acquire: acquire.sort(byWeightFor(me)), release };
}

/**
 * The tenants the cluster runs that this replica does not know: recorded in the store
 * (`recorded`, settleTenants) and validly leased by another replica, yet missing from this
 * replica's `tenants` (its tenants directory is empty, wrongly mounted, or not read again yet).
 * While there is any, the replica sits the deal out: counted in it, it would take a fair share
 * of tenants it cannot run and leave them unheld, because the others, seeing it live, keep only
 * their own shares. Sorted by name.
 */
export function tenantsMissingHere(snapshot: {
  me: string;
  tenants: readonly string[];
  recorded: readonly string[];
  leases: ReadonlyMap<string, string>;
}): string[] {
  const known = new Set(snapshot.tenants);
  return [...new Set(snapshot.recorded)]
    .filter((tenant) => {
      const holder = snapshot.leases.get(tenant);
      return !known.has(tenant) && holder !== undefined && holder !== snapshot.me;
    })
    .sort(compare);
}
