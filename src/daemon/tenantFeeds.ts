import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RouteDecision } from '../cluster/holderRoute.js';
import type { TenantConfig } from '../config/tenantConfigSchema.js';
import type { EventFeed } from '../feed/eventFeed.js';
import type { FeedConfig } from '../feed/feedConfig.js';
import { sendProblem } from '../feed/feedProblem.js';
import { issueTicket, TICKET_PARAMETER, verifyTicket } from '../feed/feedTicket.js';
import {
  readFeedTokens,
  readsTenant,
  type FeedReader,
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
  slots: FeedSlots;
  feedOf: (tenant: string) => EventFeed | undefined;
  /** Whether this replica knows the tenant (from its file), running here or held by another replica. */
  knows: (tenant: string) => boolean;
  /**
   * On a store shared by replicas, once it is open: where a known tenant not running here goes
   * (holderRedirect.ts). Without it such a tenant answers 503.
   */
  elsewhere?: () => TenantsElsewhere | undefined;
  /**
   * On a store shared by replicas, once it is open: the key redirect tickets are signed with
   * (shared through the store) and the clock they expire on. Without it redirects carry no
   * ticket and tickets are refused.
   */
  tickets?: () => RedirectTickets | undefined;
  /** Each answer the router gives itself, before any tenant's feed sees the request. */
  answered?: (status: number, reason: RouterAnswerReason) => void;
}

/** The HMAC key of redirect tickets and the clock (ms) they are issued and checked on. */
export interface RedirectTickets {
  key: Buffer;
  now: () => number;
}

/**
 * Why the router answered itself: a fixed set, so no client can add label values. `unauthorized`:
 * no valid token; `ticket_refused`: a redirect ticket instead of a token, and it was refused
 * (expired, another tenant or path, tampered, its token revoked); `not_found`: not a feed path, or
 * a tenant this token does not read; `redirected`: 307 to the holder; `unavailable`: 503, nobody to
 * send the client to now.
 */
export type RouterAnswerReason = 'unauthorized' | 'ticket_refused' | 'not_found' | 'redirected' | 'unavailable';

/** Sends the clients of a tenant this replica does not run to the replica that does. */
export interface TenantsElsewhere {
  /** Serve, redirect to the holder, or unavailable: decideRoute over the lease row read now. */
  route(tenant: string, target: string): Promise<RouteDecision>;
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
  const answered = routes.answered ?? (() => undefined);
  const notFound = (detail: string): void => {
    answered(404, 'not_found');
    sendProblem(res, 404, 'not-found', 'Not found', detail);
  };
  if (!byDefault && !byTenant)
    return notFound('the feed serves /v1/events and /v1/tenants/<tenant>/events, each also as /stream');
  const tenant = byTenant ? (byTenant[1] as string) : DEFAULT_TENANT;
  const stream = (byTenant ?? byDefault)?.[byTenant ? 2 : 1] !== undefined;
  const params = url?.searchParams ?? new URLSearchParams();
  const tickets = params.getAll(TICKET_PARAMETER);
  // The query without the ticket: what the tenant's feed parses, and what a redirect passes on.
  let search = url?.search ?? '';
  if (tickets.length > 0) {
    params.delete(TICKET_PARAMETER);
    const rest = params.toString();
    search = rest === '' ? '' : `?${rest}`;
  }
  const tokens = routes.tokens();
  const authorization = req.headers.authorization;
  const byToken = tokens.match(authorization);
  // A token, when sent, decides: a wrong one is not rescued by a ticket.
  const byTicket =
    authorization === undefined && tickets.length > 0
      ? ticketReader(tickets, { tenant, path }, tokens, routes.tickets?.())
      : undefined;
  const reader = byToken ?? byTicket?.reader;
  if (!reader) {
    answered(401, authorization === undefined && tickets.length > 0 ? 'ticket_refused' : 'unauthorized');
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
  const reads = readsTenant(reader, tenant);
  const feed = reads ? routes.feedOf(tenant) : undefined;
  // After the token, and only for a tenant this token reads: nobody learns a holder's URL, nor
  // that a tenant exists, without the right to read it.
  if (!feed && reads && routes.knows(tenant)) {
    const elsewhere = routes.elsewhere?.();
    if (!elsewhere) {
      answered(503, 'unavailable');
      const detail = `tenant ${tenant} is not running on this replica (starting, stopped, or held by another replica)`;
      return sendNotServedHere(res, detail, 5);
    }
    const signer = routes.tickets?.();
    const claim = { tenant, readerKey: reader.key, path };
    const ticket = signer ? issueTicket(signer.key, claim, signer.now(), byTicket?.expiresAtMs) : undefined;
    // From the parsed URL, not the raw target: an absolute-form target (`GET http://x/v1/...`)
    // must not put its own origin after the holder's.
    return answerElsewhere(res, tenant, `${path}${search}`, ticket, elsewhere, answered);
  }
  if (!feed) return notFound('this token reads no feed at this path');
  // The feed never sees the ticket: it is no feed parameter, and no `Link` may carry it on.
  if (tickets.length > 0) req.url = `${path}${search}`;
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

/**
 * The reader a redirect ticket vouches for, and when the ticket expires: one ticket, valid for
 * this tenant and path, signed with the cluster's key, naming a token still configured that still
 * reads the tenant here.
 */
function ticketReader(
  tickets: readonly string[],
  expect: { tenant: string; path: string },
  tokens: FeedTokens,
  signer: RedirectTickets | undefined,
): { reader: FeedReader; expiresAtMs: number } | undefined {
  if (!signer || tickets.length !== 1) return undefined;
  const verified = verifyTicket(signer.key, tickets[0] as string, expect, signer.now());
  if (!('readerKey' in verified)) return undefined;
  const reader = tokens.reader(verified.readerKey);
  return reader && readsTenant(reader, expect.tenant) ? { reader, expiresAtMs: verified.expiresAtMs } : undefined;
}

function answerElsewhere(
  res: ServerResponse,
  tenant: string,
  target: string,
  ticket: string | undefined,
  elsewhere: TenantsElsewhere,
  answered: (status: number, reason: RouterAnswerReason) => void,
): void {
  elsewhere
    .route(tenant, target)
    .then(
      (decision) => answerRoute(res, tenant, withTicket(decision, ticket), answered),
      // What the store said is not the client's business (it may name hosts); the cause is in
      // the replica's own logs and /readyz, where its lease rounds fail the same way.
      () => {
        answered(503, 'unavailable');
        sendNotServedHere(
          res,
          `tenant ${tenant} is not running on this replica, and who holds it could not be read from the store`,
          5,
        );
      },
    )
    // The response could not be written (the client left, a header Node refuses): drop the
    // connection rather than let the error escape the request listener.
    .catch(() => res.destroy());
}

const UNAVAILABLE_DETAIL: Record<Extract<RouteDecision, { kind: 'unavailable' }>['reason'], string> = {
  'no-holder': 'no replica holds it now (new, or between holders)',
  'holder-is-self': 'this replica is taking it up or giving it away',
  'holder-not-live': 'its holder stopped answering; another replica takes it when the lease expires',
  'holder-not-advertised': 'its holder sets no cluster.advertiseUrl, so requests cannot be sent there',
  'holder-url-is-self': "its holder's cluster.advertiseUrl is this replica's own: give each replica its own",
};

/** The redirect's Location with the ticket appended (issueTicket says why); the rest of the target passed on byte for byte. */
function withTicket(decision: RouteDecision, ticket: string | undefined): RouteDecision {
  if (decision.kind !== 'redirect' || ticket === undefined) return decision;
  const joiner = decision.url.includes('?') ? '&' : '?';
  return { ...decision, url: `${decision.url}${joiner}${TICKET_PARAMETER}=${ticket}` };
}

function answerRoute(
  res: ServerResponse,
  tenant: string,
  decision: RouteDecision,
  answered: (status: number, reason: RouterAnswerReason) => void,
): void {
  if (res.headersSent || res.destroyed) return;
  answered(decision.kind === 'redirect' ? 307 : 503, decision.kind === 'redirect' ? 'redirected' : 'unavailable');
  if (decision.kind === 'redirect') {
    res.writeHead(307, { location: decision.url, 'cache-control': 'no-store', 'content-length': '0' }).end();
    return;
  }
  if (decision.kind === 'serve') {
    // The tenant started here while its lease row was read: the client's retry finds it.
    sendNotServedHere(res, `tenant ${tenant} is starting on this replica`, 1, {}, 'Tenant starting here');
    return;
  }
  const holder = decision.holder === undefined ? '' : ` (held by ${decision.holder})`;
  sendNotServedHere(
    res,
    `tenant ${tenant} is not running on this replica${holder}: ${UNAVAILABLE_DETAIL[decision.reason]}`,
    decision.retryAfterSeconds,
    decision.holder === undefined ? {} : { holder: decision.holder },
  );
}

/** The 503 for a tenant this replica does not serve now; the client asks again after `retryAfterSeconds`. */
function sendNotServedHere(
  res: ServerResponse,
  detail: string,
  retryAfterSeconds: number,
  extensions: Record<string, string> = {},
  title = 'Tenant not served here',
): void {
  sendProblem(res, 503, 'tenant-elsewhere', title, detail, extensions, { 'retry-after': String(retryAfterSeconds) });
}
