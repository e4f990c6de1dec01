import { createHmac, timingSafeEqual } from 'node:crypto';

/** The query parameter a redirect's Location carries the ticket in; never a feed parameter. */
export const TICKET_PARAMETER = 'cf_ticket';
/** How long a ticket is valid after it is issued, on the issuing replica's clock. */
export const TICKET_LIFETIME_MS = 60_000;
/** How far the holder's clock may disagree with the issuer's (replicas run NTP; a lease round is longer). */
export const TICKET_SKEW_MS = 10_000;
/** Longer than any ticket issued (a 200-character tenant, the longest path): refused unread. */
export const MAX_TICKET_CHARS = 2048;

/** What a ticket vouches for: this reader, this tenant, this path, until then. */
export interface TicketClaim {
  tenant: string;
  /** FeedReader.key of the token that was checked: a digest of it, never the token. */
  readerKey: string;
  /** The feed path as the router saw it (`/v1/tenants/<tenant>/events[/stream]`), without the query. */
  path: string;
}

/** Why a ticket was refused; each is a 401 to the client, the same for all. */
export type TicketRefusal = 'malformed' | 'bad-signature' | 'expired' | 'too-far-ahead' | 'other-tenant' | 'other-path';

const TICKET_SHAPE = /^([A-Za-z0-9_-]{1,2000})\.([A-Za-z0-9_-]{43})$/;

/**
 * A ticket for `claim`, valid until `nowMs + TICKET_LIFETIME_MS`, or `notAfterMs` if sooner: a
 * request let in by a ticket and redirected again gets one expiring with the ticket it came with,
 * so sending a ticket to a replica that does not hold the tenant never renews it. Base64url of its
 * JSON payload, a dot, base64url of the payload's HMAC-SHA256 under `key`. Like a presigned URL's
 * signature, it lets a client whose redirect-following dropped the `Authorization` header (fetch,
 * browsers, curl -L, requests: a redirect to another origin) be served by the holder without ever
 * carrying the token itself.
 */
export function issueTicket(key: Buffer, claim: TicketClaim, nowMs: number, notAfterMs = Infinity): string {
  const expiresAtMs = Math.floor(Math.min(nowMs + TICKET_LIFETIME_MS, notAfterMs));
  const payload = Buffer.from(
    JSON.stringify({ t: claim.tenant, r: claim.readerKey, p: claim.path, e: expiresAtMs }),
    'utf8',
  ).toString('base64url');
  return `${payload}.${signature(key, payload).toString('base64url')}`;
}

/**
 * The reader key a ticket vouches for at `tenant` and `path`, or why it is refused. The signature
 * is checked, in constant time, before a byte of the payload is parsed. Expiry is on the replicas'
 * own clocks, with TICKET_SKEW_MS of allowance both ways: a ticket stays valid that much past its
 * expiry, and one expiring later than a fresh ticket could (plus the allowance) is refused, so a
 * replica whose clock runs ahead cannot issue long-lived tickets.
 */
export function verifyTicket(
  key: Buffer,
  ticket: string,
  expect: { tenant: string; path: string },
  nowMs: number,
): { readerKey: string; expiresAtMs: number } | { refused: TicketRefusal } {
  if (ticket.length > MAX_TICKET_CHARS) return { refused: 'malformed' };
  const shape = TICKET_SHAPE.exec(ticket);
  if (!shape) return { refused: 'malformed' };
  const [, payload, mac] = shape as unknown as [string, string, string];
  const presented = Buffer.from(mac, 'base64url');
  const wanted = signature(key, payload);
  if (presented.length !== wanted.length || !timingSafeEqual(presented, wanted)) return { refused: 'bad-signature' };
  const claim = parseClaim(payload);
  if (!claim) return { refused: 'malformed' };
  if (nowMs > claim.e + TICKET_SKEW_MS) return { refused: 'expired' };
  if (claim.e > nowMs + TICKET_LIFETIME_MS + TICKET_SKEW_MS) return { refused: 'too-far-ahead' };
  if (claim.t !== expect.tenant) return { refused: 'other-tenant' };
  if (claim.p !== expect.path) return { refused: 'other-path' };
  return { readerKey: claim.r, expiresAtMs: claim.e };
}

function signature(key: Buffer, payload: string): Buffer {
  return createHmac('sha256', key).update(`changefeed-feed-ticket-v1.${payload}`, 'utf8').digest();
}

function parseClaim(payload: string): { t: string; r: string; p: string; e: number } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { t, r, p, e } = value as Record<string, unknown>;
  if (typeof t !== 'string' || typeof r !== 'string' || typeof p !== 'string') return undefined;
  if (typeof e !== 'number' || !Number.isSafeInteger(e)) return undefined;
  return { t, r, p, e };
}
