import type { RequestRecord } from '../../src/simulator/index.js';

/**
 * What the simulator's request record (`requests`: company, replica, time) says about a
 * failover: per tenant of the killed replica, its last request and the first requests of the
 * replica that took it over; and whether any company was polled by two replicas inside one lease.
 * Pure functions over the record, so the bench's loop only gathers and reports.
 */

/** What these functions read of a request. */
export type InstanceRequest = Pick<RequestRecord, 'at' | 'company' | 'instanceId' | 'path' | 'status'>;

/** One tenant of the killed replica, as the requests show it; times are epoch ms. */
export interface Takeover {
  readonly company: number;
  /** The killed replica's last request for this company (undefined: it had made none). */
  readonly lastByKilledAt: number | undefined;
  /** The first request by another replica after the kill (the ping of the tenant's start). */
  readonly firstRequestAt: number | undefined;
  /** The first activity read (a poll) by another replica after the kill. */
  readonly firstPollAt: number | undefined;
  readonly newHolder: string | undefined;
}

/** Activity reads; the ping and the discovery lists are not polls. */
const POLL_PATH = /^\/api\/v1\/(identity-provider-events|(careers|skills)\/[^/]+\/activity)$/;

export function isPoll(path: string): boolean {
  return POLL_PATH.test(path);
}

/** Per company of `orphans`, where the record stands on its takeover by another replica. */
export function takeovers(
  requests: readonly InstanceRequest[],
  orphans: readonly number[],
  killed: string,
  killedAt: number,
): Map<number, Takeover> {
  const wanted = new Set(orphans);
  const found = new Map<
    number,
    { lastByKilledAt?: number; firstRequestAt?: number; firstPollAt?: number; newHolder?: string }
  >(orphans.map((c) => [c, {}]));
  for (const r of requests) {
    if (r.company === null || r.instanceId === null || !wanted.has(r.company)) continue;
    const t = found.get(r.company)!;
    if (r.instanceId === killed) t.lastByKilledAt = r.at;
    else if (r.at >= killedAt) {
      t.firstRequestAt ??= r.at;
      t.newHolder ??= r.instanceId;
      if (isPoll(r.path)) t.firstPollAt ??= r.at;
    }
  }
  return new Map(
    [...found].map(([company, t]) => [
      company,
      {
        company,
        lastByKilledAt: t.lastByKilledAt,
        firstRequestAt: t.firstRequestAt,
        firstPollAt: t.firstPollAt,
        newHolder: t.newHolder,
      },
    ]),
  );
}

/** Requests the killed replica made after the kill: none, unless the kill did not take. */
export function requestsAfterKill(requests: readonly InstanceRequest[], killed: string, killedAt: number): number {
  return requests.filter((r) => r.instanceId === killed && r.at > killedAt).length;
}

/**
 * Companies polled by two replicas inside one lease (also the check of test/cluster's replica tests):
 * whenever a company's requests go from replica A to B and later back to A, A's return must come
 * at least a lease after B began. The takeover after the kill is checked against the lease table
 * by the bench (each new acquisition after the killed replica's expiry).
 */
export function overlaps(requests: readonly InstanceRequest[], leaseMs: number): string[] {
  const found: string[] = [];
  const byCompany = new Map<number, InstanceRequest[]>();
  for (const r of requests) {
    if (r.company === null || r.instanceId === null) continue;
    const list = byCompany.get(r.company) ?? [];
    list.push(r);
    byCompany.set(r.company, list);
  }
  for (const [company, list] of byCompany) {
    const firstAt = new Map<string, number>();
    let previous: string | null = null;
    for (const r of list) {
      const id = r.instanceId as string;
      if (previous !== null && id !== previous) {
        const returning = firstAt.get(id);
        const otherStarted = firstAt.get(previous) ?? r.at;
        if (returning !== undefined && r.at - otherStarted < leaseMs)
          found.push(`company ${company}: ${id} polled again ${r.at - otherStarted} ms after ${previous} began`);
        firstAt.set(id, r.at);
      }
      if (!firstAt.has(id)) firstAt.set(id, r.at);
      previous = id;
    }
  }
  return found;
}

/** Count, min, median, p95 and max of durations in ms, as seconds (nearest-rank percentiles). */
export function distribution(ms: readonly number[]): {
  count: number;
  min: number;
  median: number;
  p95: number;
  max: number;
} {
  const sorted = [...ms].sort((a, b) => a - b);
  const rank = (p: number): number => (sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] ?? Number.NaN) / 1000;
  return {
    count: sorted.length,
    min: rank(0),
    median: rank(0.5),
    p95: rank(0.95),
    max: rank(1),
  };
}
