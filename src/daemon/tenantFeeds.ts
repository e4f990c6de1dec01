import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TenantConfig } from '../config/tenantConfigSchema.js';
import type { EventFeed } from '../feed/eventFeed.js';
import type { FeedConfig } from '../feed/feedConfig.js';
import { sendProblem } from '../feed/feedProblem.js';
import {
  readFeedTokens,
  readsTenant,
  type FeedSlots,
  type FeedTokenGrant,
  type FeedTokens,
} from '../feed/feedTokens.js';
import { DEFAULT_TENANT, type Tenant } from '../tenants/tenant.js';

/** `/v1/events[/stream]`: the tenant `default`, the path of a daemon without tenants. */
const DEFAULT_PATH = /^\/v1\/events(\/stream)?$/;
/** Any segment: a name no tenant can have is refused after the token, as an unknown one. */
const TENANT_PATH = /^\/v1\/tenants\/([^/]{1,200})\/events(\/stream)?$/;

export interface TenantFeedRoutes {
  /** The tokens of the process and of every tenant it knows. */
  tokens: () => FeedTokens;
  /** The per-token limits, across tenants. */
  slots: FeedSlots;
  /** The feed of a tenant running in this process. */
  feedOf: (tenant: string) => EventFeed | undefined;
  /** Whether this replica knows the tenant (from its file), running here or held by another replica. */
  knows: (tenant: string) => boolean;
}

/**
 * Routes the feed listener's requests to a tenant's journal: `/v1/events` is the tenant
 * `default`, `/v1/tenants/<name>/events[/stream]` any tenant. The token is checked before
 * anything about the tenant is looked at, so every tenant name, known or not, gets the same 401
 * without a valid token; a valid token that does not read the tenant gets the same 404 whether
 * the tenant exists or not. A tenant this token reads but another replica runs answers 503 with
 * Retry-After, so a client behind a load balancer tries again and reaches another replica.
 */
export function routeTenantFeeds(req: IncomingMessage, res: ServerResponse, routes: TenantFeedRoutes): void {
  // The parser passes request targets URL refuses (`GET http://[ HTTP/1.1`): not a feed path, then.
  const target = req.url ?? '/';
  const url = URL.canParse(target, 'http://feed') ? new URL(target, 'http://feed') : undefined;
  const path = url?.pathname ?? '';
  const byDefault = DEFAULT_PATH.exec(path);
  const byTenant = byDefault ? undefined : TENANT_PATH.exec(path);
  if (!byDefault && !byTenant) {
    sendProblem(
      res,
      404,
      'not-found',
      'Not found',
      'the feed serves /v1/events and /v1/tenants/<tenant>/events, each also as /stream',
    );
    return;
  }
  const tenant = byTenant ? (byTenant[1] as string) : DEFAULT_TENANT;
  const stream = (byTenant ?? byDefault)?.[byTenant ? 2 : 1] !== undefined;
  const reader = routes.tokens().match(header(req, 'authorization'));
  if (!reader) {
    sendProblem(
      res,
      401,
      'unauthorized',
      'Unauthorized',
      'send a feed token of this tenant (feed.tokens of its file) or of every tenant (feed.allTenantsTokens) ' +
        'as "Authorization: Bearer <token>"',
      {},
      { 'www-authenticate': 'Bearer realm="changefeed"' },
    );
    return;
  }
  const feed = readsTenant(reader, tenant) ? routes.feedOf(tenant) : undefined;
  if (!feed && readsTenant(reader, tenant) && routes.knows(tenant)) {
    sendProblem(
      res,
      503,
      'tenant-elsewhere',
      'Tenant not served here',
      `tenant ${tenant} is not running on this replica (starting, stopped, or held by another replica)`,
      {},
      { 'retry-after': '5' },
    );
    return;
  }
  if (!feed) {
    sendProblem(res, 404, 'not-found', 'Not found', 'this token reads no feed at this path');
    return;
  }
  const pagePath = byTenant ? `/v1/tenants/${tenant}/events` : '/v1/events';
  feed.handle(req, res, { mode: stream ? 'stream' : 'page', pagePath, reader, slots: routes.slots });
}

/**
 * Who may read what: the main file's `feed.allTenantsTokens` every tenant, each tenant's own
 * `feed.tokens` that tenant only. A tenant whose token file cannot be read is reported through
 * `onProblem` and left without tokens (its start reports it too): never a reason to refuse the
 * other tenants' readers.
 */
export function feedTokenGrants(
  feed: Pick<FeedConfig, 'allTenantsTokens' | 'allTenantsTokenFiles'>,
  tenants: readonly Tenant<TenantConfig>[],
  onProblem: (tenant: string, error: unknown) => void,
): FeedTokenGrant[] {
  const grants: FeedTokenGrant[] = readFeedTokens(
    feed.allTenantsTokens,
    feed.allTenantsTokenFiles,
    'feed.allTenantsTokenFiles',
  ).map((token) => ({ token, reads: { kind: 'all' } }));
  for (const tenant of tenants) {
    const own = tenant.config.feed;
    if (!own) continue;
    try {
      for (const token of readFeedTokens(own.tokens, own.tokenFiles, 'feed.tokenFiles'))
        grants.push({ token, reads: { kind: 'tenant', tenant: tenant.name } });
    } catch (error) {
      onProblem(tenant.name, error);
    }
  }
  return grants;
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
