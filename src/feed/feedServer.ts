import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { FeedConfig } from './feedConfig.js';

export interface FeedServer {
  readonly url: string;
  close(): Promise<void>;
}

/** How often Node looks for connections past their header timeout: a small part of it. */
const CHECK_INTERVAL_MS = 500;

/**
 * The feed's own listener, apart from the health server: whoever reaches it may open connections
 * before any token is checked, so they are capped (`feed.maxConnections`: more are closed as they
 * arrive) and a connection that has not sent its request head within `feed.headersTimeoutSeconds`
 * is closed. Filling it never delays `/healthz` or `/readyz`, which answer on `http.port`.
 */
export async function startFeedServer(
  config: Pick<FeedConfig, 'port' | 'host' | 'maxConnections' | 'headersTimeoutSeconds'>,
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<FeedServer> {
  const timeoutMs = config.headersTimeoutSeconds * 1000;
  const server: Server = createServer(
    {
      headersTimeout: timeoutMs,
      // A feed request has no body: once its head is in, it was received. Answers (streams,
      // long-polls) are not bounded by it.
      requestTimeout: timeoutMs,
      connectionsCheckingInterval: Math.min(CHECK_INTERVAL_MS, timeoutMs),
      keepAliveTimeout: 5_000,
    },
    handle,
  );
  server.maxConnections = config.maxConnections;
  // Node times out a request head only once its first byte came: a connection that sends
  // nothing would hold its slot until the client leaves. It gets the same time for its first request.
  const silent = new WeakMap<Socket, NodeJS.Timeout>();
  server.on('connection', (socket: Socket) => {
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    silent.set(socket, timer);
    socket.once('close', () => clearTimeout(timer));
  });
  server.on('request', (req: IncomingMessage) => clearTimeout(silent.get(req.socket)));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port ?? 0, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
