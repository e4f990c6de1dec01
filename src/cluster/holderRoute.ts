import type { LeaseRow } from './leaseTable.js';

/** This replica, as the route decision sees it. */
export interface RouteSelf {
  instanceId: string;
  /** Its own `cluster.advertiseUrl`, if set. */
  advertiseUrl: string | undefined;
}

export interface RouteQuestion {
  tenant: string;
  /** Whether the tenant's feed runs in this process now. */
  heldHere: boolean;
  /** The tenant's lease row as last read (fresh or a short cache); undefined: never leased. */
  lease: Pick<LeaseRow, 'holder' | 'expiresInMs' | 'holderLive' | 'holderUrl'> | undefined;
  self: RouteSelf;
  /** The request target as received: path and query, which the redirect keeps. */
  target: string;
  /** How long a client should wait before asking again when nobody can answer now (a lease round). */
  retryAfterSeconds: number;
}

/** Why a request cannot be served nor sent on: each names what the client would wait for. */
export type UnavailableReason =
  /** No valid lease: the tenant is unknown, new, or between holders. */
  | 'no-holder'
  /** The lease row names this replica but it does not run the tenant: starting, stopping, or just lost. */
  | 'holder-is-self'
  /** The holder stopped heartbeating: its lease will expire and another replica take the tenant. */
  | 'holder-not-live'
  /** The holder set no `cluster.advertiseUrl` (or is a command such as `replay`). */
  | 'holder-not-advertised'
  /** The holder advertises this replica's own URL: two replicas share one, and a redirect would loop. */
  | 'holder-url-is-self';

export type RouteDecision =
  | { kind: 'serve' }
  | { kind: 'redirect'; url: string; holder: string }
  | { kind: 'unavailable'; reason: UnavailableReason; holder: string | undefined; retryAfterSeconds: number };

/**
 * Where a feed request for `tenant` goes (docs/scaling.md, "Any replica answers for any tenant"):
 * served here while the tenant runs here, else redirected to the replica holding a valid lease at
 * the URL it advertises, with the same path and query, else unavailable for a lease round.
 *
 * It never redirects to this replica, by id or by URL: a lease row read just before a hand-over
 * may still name this replica, and two replicas given one URL would send a client back and forth.
 * A holder that stopped heartbeating is not redirected to either: its clients would only meet a
 * dead port until its lease expires.
 */
export function decideRoute(question: RouteQuestion): RouteDecision {
  if (question.heldHere) return { kind: 'serve' };
  const { lease, self, retryAfterSeconds } = question;
  const unavailable = (reason: UnavailableReason, holder?: string): RouteDecision => ({
    kind: 'unavailable',
    reason,
    holder,
    retryAfterSeconds,
  });
  if (lease?.holder === undefined || !(lease.expiresInMs > 0)) return unavailable('no-holder');
  const { holder } = lease;
  if (holder === self.instanceId) return unavailable('holder-is-self', holder);
  if (!lease.holderLive) return unavailable('holder-not-live', holder);
  if (lease.holderUrl === undefined) return unavailable('holder-not-advertised', holder);
  if (lease.holderUrl === self.advertiseUrl) return unavailable('holder-url-is-self', holder);
  return { kind: 'redirect', url: `${lease.holderUrl}${question.target}`, holder };
}
