import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { closeSilentConnections, headTimeoutOptions } from '../silentConnections.js';
import type { FeedConfig } from './feedConfig.js';

export interface FeedServer {
  readonly url: string;
  close(): Promise<void>;
}

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
  // A feed request has no body: once its head is in, it was received. Answers (streams,
  // long-polls) are not bounded by the timeouts.
  const server: Server = createServer(headTimeoutOptions(timeoutMs), handle);
  server.maxConnections = config.maxConnections;
  closeSilentConnections(server, timeoutMs);
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
