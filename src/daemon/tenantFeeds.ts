import type { IncomingMessage, ServerResponse } from 'node:http';
import type { EventFeed } from '../feed/eventFeed.js';
import { sendProblem } from '../feed/feedProblem.js';
import { DEFAULT_TENANT } from '../tenants/tenant.js';

const TENANT_PATH = /^\/v1\/tenants\/([a-z0-9][a-z0-9_-]{0,62})(\/events(?:\/stream)?(?:[?].*)?)$/;

/**
 * Routes the pull feed to a tenant's journal: `/v1/events` is the tenant `default` (the path of a
 * daemon without tenants), `/v1/tenants/<name>/events[/stream]` any tenant running in this
 * process. A tenant running elsewhere (another replica holds its lease) answers 503 with
 * Retry-After, so a client behind a load balancer tries again and reaches another replica.
 */
export function routeTenantFeeds(
  req: IncomingMessage,
  res: ServerResponse,
  feedOf: (tenant: string) => EventFeed | undefined,
): boolean {
  const target = req.url ?? '/';
  const match = TENANT_PATH.exec(target);
  if (!match) return feedOf(DEFAULT_TENANT)?.handle(req, res) ?? false;
  const [, tenant, rest] = match as unknown as [string, string, string];
  const feed = feedOf(tenant);
  if (!feed) {
    sendProblem(
      res,
      503,
      'tenant-elsewhere',
      'Tenant not served here',
      `tenant ${tenant} is not running on this replica (unknown, stopped, or held by another replica)`,
      {},
      { 'retry-after': '5' },
    );
    return true;
  }
  req.url = `/v1${rest}`;
  return feed.handle(req, res);
}
