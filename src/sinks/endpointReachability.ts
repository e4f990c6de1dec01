import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

/** Socket errors that mean the endpoint cannot be reached at all (nothing was sent to it). */
export const UNREACHABLE_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
  'CONNECT_TIMEOUT',
]);

/** True for an error of a connection attempt that never reached the endpoint. */
export function isUnreachable(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && UNREACHABLE_CODES.has(code);
}

/**
 * Opens one TCP connection to the URL's host and port (with a TLS handshake for https, so a
 * certificate problem shows here too) and closes it again, sending no request. Rejects with the
 * socket's error (its `code` kept) or a CONNECT_TIMEOUT error after `timeoutMs`.
 */
export async function checkReachable(
  url: URL,
  timeoutMs: number,
  signal: AbortSignal,
  tls: { ca?: string; cert?: string; key?: string } = {},
): Promise<void> {
  const https = url.protocol === 'https:';
  const port = Number(url.port || (https ? 443 : 80));
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  let socket: Socket | undefined;
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      socket = https
        ? tlsConnect({ host, port, servername: host, ...tls }, resolve)
        : netConnect({ host, port }, resolve);
      socket.once('error', reject);
      timer = setTimeout(
        () => reject(Object.assign(new Error(`no connection within ${timeoutMs} ms`), { code: 'CONNECT_TIMEOUT' })),
        timeoutMs,
      );
      onAbort = () => reject(signal.reason as Error);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  } finally {
    clearTimeout(timer);
    if (onAbort) signal.removeEventListener('abort', onAbort);
    socket?.destroy();
  }
}
