import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from '../clock.js';
import type { SimulatedService } from './simulatedService.js';

export interface SimulatorServer {
  /** Base URL such as http://127.0.0.1:PORT; still readable after close. */
  readonly url: string;
  /** Stops listening, drops open connections and abandons delayed responses. Idempotent. */
  close(): Promise<void>;
}

/**
 * The node:http transport of the simulated service. Latency is slept on the injected clock, so a
 * test on a ManualClock decides when a slow response lands, and close() never waits for it.
 */
export async function listenSimulator(
  service: SimulatedService,
  clock: Clock,
  host: string,
  port: number,
): Promise<SimulatorServer> {
  const shutdown = new AbortController();
  const respond = (req: IncomingMessage, res: ServerResponse): void => {
    // Bodies are never read (writes are not simulated); drain them so the connection stays usable.
    req.resume();
    const response = service.handle({
      method: req.method ?? 'GET',
      url: req.url ?? '/',
      authorization: req.headers.authorization,
      userAgent: req.headers['user-agent'],
    });
    const send = (): void => {
      // The Date header comes from the injected clock; stop node from stamping real time.
      res.sendDate = false;
      res.writeHead(response.status, {
        ...response.headers,
        'Content-Length': String(Buffer.byteLength(response.body)),
      });
      res.end(response.body);
    };
    if (response.delayMs <= 0) send();
    // The only way the sleep fails is close() aborting it: the connection is going away anyway.
    else clock.sleep(response.delayMs, shutdown.signal).then(send, () => res.destroy());
  };
  const server = createServer(respond).listen(port, host);
  await once(server, 'listening');
  const address = server.address() as AddressInfo;
  const hostPart = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${hostPart}:${address.port}`,
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        shutdown.abort();
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}
