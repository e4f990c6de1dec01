import type { GrantedLease, LeaseTable } from '../../src/cluster/leaseTable.js';

/** One tenant's acquisition through the path the replicas take (acquireMany); undefined when another holds it. */
export async function acquireOne(
  table: LeaseTable,
  tenant: string,
  holder: string,
  keyFingerprint?: string,
): Promise<GrantedLease | undefined> {
  return (await table.acquireMany(holder, [{ tenant, keyFingerprint }])).granted[0];
}
