import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RouteDecision } from '../cluster/holderRoute.js';
import type { EventFeed } from '../feed/eventFeed.js';
import { sendProblem } from '../feed/feedProblem.js';
import { DEFAULT_TENANT } from '../tenants/tenant.js';

const TENANT_PATH = /^\/v1\/tenants\/([a-z0-9][a-z0-9_-]{0,62})(\/events(?:\/stream)?(?:[?].*)?)$/;
const DEFAULT_PATH = /^\/v1\/events(?:\/stream)?(?:[?].*)?$/;

/**
 * How a tenant not running in this process is answered on a store shared by replicas with the
 * feed on (holderRedirect.ts). Absent otherwise: such a tenant then answers 503.
 */
export interface TenantsElsewhere {
  /** Whether `/v1/events` is a tenant's path (the tenant `default`: no tenants directory). */
  readonly defaultPath: boolean;
  /**
   * The feed's own token check, run before anything about the tenant is looked up, so a client
   * without a token gets the same 401 for a tenant that exists elsewhere and one that does not.
   */
  authorized(req: IncomingMessage): boolean;
  /** Serve, redirect to the holder, or unavailable: decideRoute over the lease row read now. */
  route(tenant: string, target: string): Promise<RouteDecision>;
}

/**
 * Routes the pull feed to a tenant's journal: `/v1/events` is the tenant `default` (the path of a
 * daemon without tenants), `/v1/tenants/<name>/events[/stream]` any tenant running in this
 * process. A tenant running elsewhere (another replica holds its lease) is redirected (307) to
 * the holder's advertised URL with the same path and query; when there is none to send it to,
 * 503 with Retry-After naming the holder, so a client behind a load balancer tries again.
 */
export function routeTenantFeeds(
  req: IncomingMessage,
  res: ServerResponse,
  feedOf: (tenant: string) => EventFeed | undefined,
  elsewhere?: TenantsElsewhere,
): boolean {
  const target = req.url ?? '/';
  const match = TENANT_PATH.exec(target);
  if (!match) {
    const feed = feedOf(DEFAULT_TENANT);
    if (feed) return feed.handle(req, res);
    if (!elsewhere?.defaultPath || !DEFAULT_PATH.test(target)) return false;
    answerElsewhere(req, res, DEFAULT_TENANT, elsewhere);
    return true;
  }
  const [, tenant, rest] = match as unknown as [string, string, string];
  const feed = feedOf(tenant);
  if (feed) {
    req.url = `/v1${rest}`;
    return feed.handle(req, res);
  }
  if (elsewhere) answerElsewhere(req, res, tenant, elsewhere);
  else
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

function answerElsewhere(req: IncomingMessage, res: ServerResponse, tenant: string, elsewhere: TenantsElsewhere): void {
  // In the order a tenant's own feed answers (EventFeed.handle): method, then token, so neither
  // tells a tenant running elsewhere from one that does not exist.
  const stream = (req.url ?? '').split('?')[0]!.endsWith('/stream');
  if (req.method !== 'GET' && !(req.method === 'HEAD' && !stream)) {
    sendProblem(
      res,
      405,
      'method-not-allowed',
      'Method not allowed',
      'the feed is read with GET',
      {},
      { allow: 'GET' },
    );
    return;
  }
  if (!elsewhere.authorized(req)) {
    sendProblem(
      res,
      401,
      'unauthorized',
      'Unauthorized',
      'send one of the tokens of feed.tokens or feed.tokenFiles as "Authorization: Bearer <token>"',
      {},
      { 'www-authenticate': 'Bearer realm="changefeed"' },
    );
    return;
  }
  const target = req.url ?? '/';
  elsewhere
    .route(tenant, target)
    .then(
      (decision) => answer(res, tenant, decision),
      // What the store said is not the client's business (it may name hosts); the cause is in
      // the replica's own logs and /readyz, where its lease rounds fail the same way.
      () =>
        sendProblem(
          res,
          503,
          'tenant-elsewhere',
          'Tenant not served here',
          `tenant ${tenant} is not running on this replica, and who holds it could not be read from the store`,
          {},
          { 'retry-after': '5' },
        ),
    )
    // The response could not be written (the client left, a header Node refuses): drop the
    // connection rather than let the error escape the request listener.
    .catch(() => res.destroy());
}

const UNAVAILABLE_DETAIL: Record<Extract<RouteDecision, { kind: 'unavailable' }>['reason'], string> = {
  'no-holder': 'no replica holds it now (unknown, new, or between holders)',
  'holder-is-self': 'this replica is taking it up or giving it away',
  'holder-not-live': 'its holder stopped answering; another replica takes it when the lease expires',
  'holder-not-advertised': 'its holder sets no cluster.advertiseUrl, so requests cannot be sent there',
  'holder-url-is-self': "its holder's cluster.advertiseUrl is this replica's own: give each replica its own",
};

function answer(res: ServerResponse, tenant: string, decision: RouteDecision): void {
  if (res.headersSent || res.destroyed) return;
  if (decision.kind === 'redirect') {
    res.writeHead(307, { location: decision.url, 'cache-control': 'no-store', 'content-length': '0' }).end();
    return;
  }
  if (decision.kind === 'serve') {
    // The tenant started here while its lease row was read: the client's retry finds it.
    sendProblem(
      res,
      503,
      'tenant-elsewhere',
      'Tenant starting here',
      `tenant ${tenant} is starting on this replica`,
      {},
      {
        'retry-after': '1',
      },
    );
    return;
  }
  const holder = decision.holder === undefined ? '' : ` (held by ${decision.holder})`;
  sendProblem(
    res,
    503,
    'tenant-elsewhere',
    'Tenant not served here',
    `tenant ${tenant} is not running on this replica${holder}: ${UNAVAILABLE_DETAIL[decision.reason]}`,
    decision.holder === undefined ? {} : { holder: decision.holder },
    { 'retry-after': String(decision.retryAfterSeconds) },
  );
}
