import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { waitWithin } from './deadline.js';

/** Longest wait after a TLS 1.3 handshake for the server to accept or refuse the client (see checkReachable). */
const TICKET_WAIT_MS = 1_000;

/**
 * Opens one TCP connection to the URL's host and port (with a TLS handshake for https, so a
 * certificate problem shows here too) and closes it again, sending no request. Rejects with the
 * socket's error (its `code` kept), a CONNECT_TIMEOUT error after `timeoutMs`, or an AbortedError.
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
  let grace: NodeJS.Timeout | undefined;
  const connected = new Promise<void>((resolve, reject) => {
    socket = https
      ? tlsConnect({ host, port, servername: host, ...tls }, function (this: TLSSocket) {
          // TLS 1.3: a server that wants a client certificate refuses a connection without one
          // only after the handshake, in its first message; one that accepted it sends a session
          // ticket. Wait briefly for either (servers that send no tickets cost the wait).
          if (this.getProtocol() !== 'TLSv1.3') return resolve();
          this.once('session', () => resolve());
          this.once('close', () => resolve());
          grace = setTimeout(resolve, Math.min(TICKET_WAIT_MS, timeoutMs));
        })
      : netConnect({ host, port }, resolve);
    socket.once('error', reject);
  });
  try {
    await waitWithin(connected, {
      what: `connect to ${url.origin}`,
      signal,
      timeoutMs,
      onTimeout: () => Object.assign(new Error(`no connection within ${timeoutMs} ms`), { code: 'CONNECT_TIMEOUT' }),
    });
  } finally {
    clearTimeout(grace);
    socket?.destroy();
  }
}
