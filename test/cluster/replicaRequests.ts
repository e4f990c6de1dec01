import { overlaps as overlapsInRecord } from '../../bench/cases/failoverRecords.js';
import type { Simulator } from '../../src/simulator/index.js';

/**
 * What the simulator saw of the replicas: each request carries the instance id of the replica
 * that made it (its User-Agent), so tests can check who polled which company when.
 */
export interface CompanyRequest {
  at: number;
  instanceId: string | null;
}

/** Each company's requests in arrival order. */
export function requestsByCompany(simulator: Simulator): Map<number, CompanyRequest[]> {
  const by = new Map<number, CompanyRequest[]>();
  for (const r of simulator.requests) {
    if (r.company === null) continue;
    const list = by.get(r.company) ?? [];
    list.push({ at: r.at, instanceId: r.instanceId });
    by.set(r.company, list);
  }
  return by;
}

/** No tenant was polled by two replicas inside one lease (the failover bench's check, on the simulator's record). */
export function overlaps(simulator: Simulator, leaseSeconds: number): string[] {
  return overlapsInRecord(simulator.requests, leaseSeconds * 1000);
}

/** A company's polling moving from one replica to another. */
export interface HandOver {
  company: number;
  from: string;
  to: string;
  /** The old holder's last request before the move. */
  lastAt: number;
  /** The new holder's first request. */
  firstAt: number;
}

/** Every change of the replica polling a company, with the gap between the two holders' requests. */
export function handOvers(simulator: Simulator): HandOver[] {
  const found: HandOver[] = [];
  for (const [company, requests] of requestsByCompany(simulator)) {
    let previous: CompanyRequest | undefined;
    for (const r of requests) {
      if (r.instanceId === null) continue;
      if (previous?.instanceId && previous.instanceId !== r.instanceId)
        found.push({ company, from: previous.instanceId, to: r.instanceId, lastAt: previous.at, firstAt: r.at });
      previous = r;
    }
  }
  return found;
}

/** "min a ms, median b ms, max c ms" of some durations. */
export function spread(durations: readonly number[]): string {
  const sorted = [...durations].sort((a, b) => a - b);
  if (sorted.length === 0) return 'none';
  return `min ${sorted[0]} ms, median ${sorted[sorted.length >> 1]} ms, max ${sorted.at(-1)} ms (${sorted.length})`;
}

/** When each replica acquired which tenant, from its "lease acquired" log lines. */
export function acquisitions(logs: ReadonlyMap<string, string>): { instanceId: string; tenant: string; at: number }[] {
  const found: { instanceId: string; tenant: string; at: number }[] = [];
  for (const [instanceId, text] of logs)
    for (const m of text.matchAll(/^.*"msg":"lease acquired.*$/gm)) {
      const line = JSON.parse(m[0]) as { time: number; tenant: string };
      found.push({ instanceId, tenant: line.tenant, at: line.time });
    }
  return found.sort((a, b) => a.at - b.at);
}

/**
 * Requests a replica made for a company while it held no lease of it. A replica polls a company in
 * stretches (its requests, in the simulator's arrival order, until another replica's come), and
 * each stretch must have begun under an acquisition of its own: matched in order, every stretch of
 * a replica takes the next of its acquisitions of the tenant (per its "lease acquired" log lines)
 * logged no later than the stretch's first request was received. Exact where `overlaps` is a
 * heuristic: a lease released gracefully may move back within a lease (A to B and back to A)
 * without any overlap, which `overlaps` would report.
 *
 * Only the start of a stretch is compared with a log time, and only one way: a request is received
 * after it was sent, and sent after its holder logged the acquisition, so a simulator starved of
 * CPU (it runs in the test process) receiving late does not count against a replica. Comparing
 * every request's receipt with the next holder's acquisition did: the last request of a graceful
 * hand-over, sent before the release, was received after the next holder had logged its own.
 */
export function requestsOutsideLease(
  simulator: Simulator,
  logs: ReadonlyMap<string, string>,
  tenantName: (company: number) => string,
): string[] {
  return stretchesOutsideLease(requestsByCompany(simulator), acquisitions(logs), tenantName);
}

/** `requestsOutsideLease` over a request record and the acquisitions, for tables. */
export function stretchesOutsideLease(
  byCompany: ReadonlyMap<number, readonly CompanyRequest[]>,
  acquired: readonly { instanceId: string; tenant: string; at: number }[],
  tenantName: (company: number) => string,
): string[] {
  const found: string[] = [];
  for (const [company, requests] of byCompany) {
    const tenant = tenantName(company);
    const unused = new Map<string, number[]>();
    for (const a of acquired)
      if (a.tenant === tenant) unused.set(a.instanceId, [...(unused.get(a.instanceId) ?? []), a.at]);
    let current: string | null = null;
    for (const r of requests) {
      if (r.instanceId === null || r.instanceId === current) continue;
      current = r.instanceId;
      const times = unused.get(r.instanceId) ?? [];
      if (times.length > 0 && times[0]! <= r.at) times.shift();
      else
        found.push(
          `company ${company}: ${r.instanceId} began polling at ${r.at} without an acquisition of its own before it` +
            ` (its unused acquisitions: ${times.length === 0 ? 'none' : times.join(', ')})`,
        );
    }
  }
  return found;
}
