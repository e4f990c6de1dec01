import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SESSION_COOKIE = 'changefeed_console';
const VERSION = 'v1';
/**
 * How far a replica's clock may run ahead of this one's: a session ending later than a lifetime
 * and this from now was issued by a clock further ahead, and would outlast its lifetime here.
 */
export const SESSION_CLOCK_SKEW_MS = 5 * 60_000;

/** A signed-in browser: its random id, its token's key and when it ends (clock ms). */
export interface ConsoleSession {
  readonly id: string;
  readonly tokenKey: string;
  readonly expiresAt: number;
}

/**
 * Sessions as HMAC-signed cookie values (`v1.<id>.<expiry>.<token key>.<mac>`): nothing is kept
 * on the server, so any replica that shares the key accepts a session another one issued. The
 * cookie names the token by its key, never the token; the role is looked up from the tokens
 * configured now, so a token removed from the config ends its sessions at once. A session's CSRF
 * token is an HMAC of its id under the same key.
 */
export class ConsoleSessions {
  constructor(
    private key: Buffer,
    private readonly lifetimeMs: number,
  ) {}

  /** Sessions signed from now on (and accepted) use `key`: on a shared store, the replicas' key. */
  useKey(key: Buffer): void {
    this.key = key;
  }

  issue(tokenKey: string, now: number): { session: ConsoleSession; cookie: string } {
    const session = { id: randomBytes(16).toString('base64url'), tokenKey, expiresAt: now + this.lifetimeMs };
    const body = `${VERSION}.${session.id}.${session.expiresAt.toString(36)}.${tokenKey}`;
    return { session, cookie: `${body}.${this.mac(body)}` };
  }

  /** The session a cookie value carries, or undefined when it is forged, damaged or expired. */
  verify(cookie: string | undefined, now: number): ConsoleSession | undefined {
    if (cookie === undefined || cookie.length > 256) return undefined;
    const parts = cookie.split('.');
    if (parts.length !== 5 || parts[0] !== VERSION) return undefined;
    const [, id, expiry, tokenKey, mac] = parts as [string, string, string, string, string];
    if (!equal(mac, this.mac(parts.slice(0, 4).join('.')))) return undefined;
    const expiresAt = parseInt(expiry, 36);
    if (!Number.isSafeInteger(expiresAt) || expiresAt <= now) return undefined;
    if (expiresAt > now + this.lifetimeMs + SESSION_CLOCK_SKEW_MS) return undefined;
    return { id, tokenKey, expiresAt };
  }

  /** The CSRF token every form of this session carries. */
  csrfToken(session: ConsoleSession): string {
    return this.mac(`csrf.${session.id}`);
  }

  checkCsrf(session: ConsoleSession, presented: string | undefined): boolean {
    return presented !== undefined && equal(presented, this.csrfToken(session));
  }

  private mac(text: string): string {
    return createHmac('sha256', this.key).update(text, 'utf8').digest('base64url');
  }
}

function equal(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  return left.length === right.length && timingSafeEqual(left, right);
}
