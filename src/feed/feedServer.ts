import type { IncomingMessage, ServerResponse } from 'node:http';
import { listenBounded, type BoundedListener } from '../boundedListener.js';
import type { FeedConfig } from './feedConfig.js';

export type FeedServer = BoundedListener;

/**
 * The feed's own listener, apart from the health server: whoever reaches it may open connections
 * before any token is checked, so they are capped (`feed.maxConnections`: more are closed as they
 * arrive) and a connection that has not sent its request head within `feed.headersTimeoutSeconds`
 * is closed. Filling it never delays `/healthz` or `/readyz`, which answer on `http.port`.
 */
export function startFeedServer(
  config: Pick<FeedConfig, 'port' | 'host' | 'maxConnections' | 'headersTimeoutSeconds'>,
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<FeedServer> {
  return listenBounded(config, handle);
}
