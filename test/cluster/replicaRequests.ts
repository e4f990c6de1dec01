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
  for (const r of simulator.instanceRequests) {
    if (r.company === null) continue;
    const list = by.get(r.company) ?? [];
    list.push({ at: r.at, instanceId: r.instanceId });
    by.set(r.company, list);
  }
  return by;
}

/**
 * No tenant was polled by two replicas inside one lease: whenever the requests of a company go
 * from replica A to B and back to A, A's return came at least a lease after B began.
 */
export function overlaps(simulator: Simulator, leaseSeconds: number): string[] {
  const found: string[] = [];
  for (const [company, requests] of requestsByCompany(simulator)) {
    const firstAt = new Map<string, number>();
    let previous: string | null = null;
    for (const r of requests) {
      if (r.instanceId === null) continue;
      if (previous !== null && r.instanceId !== previous) {
        const returning = firstAt.get(r.instanceId);
        const otherStarted = firstAt.get(previous) ?? r.at;
        if (returning !== undefined && r.at - otherStarted < leaseSeconds * 1000)
          found.push(
            `company ${company}: ${r.instanceId} polled again ${r.at - otherStarted} ms after ${previous} began`,
          );
        firstAt.set(r.instanceId, r.at);
      }
      if (!firstAt.has(r.instanceId)) firstAt.set(r.instanceId, r.at);
      previous = r.instanceId;
    }
  }
  return found;
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
