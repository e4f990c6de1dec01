import type { IncomingMessage } from 'node:http';
import type { Clock } from '../clock.js';
import { decideRoute, type RouteDecision, type RouteSelf } from '../cluster/holderRoute.js';
import { LeaseDirectory } from '../cluster/leaseDirectory.js';
import type { LeaseTable } from '../cluster/leaseTable.js';
import type { FeedConfig } from '../feed/feedConfig.js';
import { FeedTokens } from '../feed/feedTokens.js';
import { readSecretFile } from '../secrets/readSecretFile.js';
import type { TenantsElsewhere } from './tenantFeeds.js';

export interface HolderRedirectOptions {
  table: Pick<LeaseTable, 'list'>;
  self: RouteSelf;
  /** cluster.leaseSeconds in ms: a client with nowhere to go waits a lease round (a third of it). */
  leaseMs: number;
  /** The process's feed tokens: those every tenant's feed accepts here. */
  feed: FeedConfig;
  /** No tenants directory: `/v1/events` is the tenant `default`, leased like any other. */
  defaultPath: boolean;
  /** Ages the lease rows read (default: systemClock). */
  clock?: Clock;
}

/**
 * Sends feed clients of a tenant this replica does not run to the replica that does, on a
 * PostgreSQL store (docs/scaling.md, "Any replica answers for any tenant"): the token checked as
 * the tenant's feed would, then decideRoute over the tenant's lease row at most a second old.
 */
export function holderRedirect(options: HolderRedirectOptions): TenantsElsewhere {
  // The tenants' feeds read the same files at their start and refuse to start without a token.
  const tokens = new FeedTokens([...options.feed.tokens, ...options.feed.tokenFiles.map((f) => readSecretFile(f))]);
  const directory = new LeaseDirectory(options.table, options.clock ? { clock: options.clock } : {});
  const retryAfterSeconds = Math.max(1, Math.ceil(options.leaseMs / 3 / 1000));
  return {
    defaultPath: options.defaultPath,
    authorized: (req: IncomingMessage) => tokens.match(req.headers.authorization) >= 0,
    async route(tenant: string, target: string): Promise<RouteDecision> {
      const lease = await directory.lease(tenant);
      return decideRoute({ tenant, heldHere: false, lease, self: options.self, target, retryAfterSeconds });
    },
  };
}
