import type { Clock } from '../clock.js';
import { decideRoute, type RouteDecision, type RouteSelf } from '../cluster/holderRoute.js';
import { LeaseDirectory } from '../cluster/leaseDirectory.js';
import type { LeaseTable } from '../cluster/leaseTable.js';
import type { TenantsElsewhere } from './tenantFeeds.js';

export interface HolderRedirectOptions {
  table: Pick<LeaseTable, 'list'>;
  self: RouteSelf;
  /** cluster.leaseSeconds in ms: a client with nowhere to go waits a lease round (a third of it). */
  leaseMs: number;
  /** Ages the lease rows read (default: systemClock). */
  clock?: Clock;
}

/**
 * Sends feed clients of a tenant this replica does not run to the replica that does, on a
 * PostgreSQL store (docs/scaling.md, "Any replica answers for any tenant"): decideRoute over the
 * tenant's lease row at most a second old. The router asks only after the token was checked.
 */
export function holderRedirect(options: HolderRedirectOptions): TenantsElsewhere {
  const directory = new LeaseDirectory(options.table, options.clock ? { clock: options.clock } : {});
  const retryAfterSeconds = Math.max(1, Math.ceil(options.leaseMs / 3 / 1000));
  return {
    async route(tenant: string, target: string): Promise<RouteDecision> {
      const lease = await directory.lease(tenant);
      return decideRoute({ tenant, heldHere: false, lease, self: options.self, target, retryAfterSeconds });
    },
  };
}
