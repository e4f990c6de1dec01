import type { IncomingMessage } from 'node:http';
import type { ConsoleUser } from './consoleTokens.js';

/** Every console page: no inline script or style, nothing from elsewhere, never framed. */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
/** Largest form body read; the console's forms are a few hundred bytes. */
const MAX_FORM_BYTES = 16_384;
/** A request that did not pass: answered with this status and message. */
export class Refusal extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

export const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': CONSOLE_CSP,
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
};

export function allow(req: IncomingMessage, methods: readonly string[]): void {
  if (!methods.includes(req.method ?? '')) throw new Refusal(405, `use ${methods.join(' or ')} here`);
}

export function requireOperator(user: ConsoleUser, what: string): void {
  if (user.role !== 'operator')
    throw new Refusal(403, `your token is read-only: an operator token is needed to ${what}`, 'role');
}

/**
 * A change must come from the console's own pages: a browser says where a request comes from in
 * `Sec-Fetch-Site` and `Origin`, and either, when sent, must name this host. The CSRF token is
 * checked besides, for clients that send neither.
 */
export function checkOrigin(req: IncomingMessage): void {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none')
    throw new Refusal(403, `a change must come from the console's own pages (Sec-Fetch-Site: ${site})`, 'origin');
  const origin = req.headers.origin;
  if (origin === undefined) return;
  const host = URL.canParse(origin) ? new URL(origin).host : undefined;
  if (host === undefined || host !== req.headers.host)
    throw new Refusal(403, "a change must come from the console's own pages (Origin is another site)", 'origin');
}

export async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim();
  if (type !== 'application/x-www-form-urlencoded')
    throw new Refusal(415, 'send the form as application/x-www-form-urlencoded');
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_FORM_BYTES) throw new Refusal(413, `a form is at most ${MAX_FORM_BYTES} bytes`);
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

export function overHttps(req: IncomingMessage): boolean {
  return (req.socket as { encrypted?: boolean }).encrypted === true || req.headers['x-forwarded-proto'] === 'https';
}

export function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new Refusal(404, 'the tenant in the address is not a name', 'tenant');
  }
}
