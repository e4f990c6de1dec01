import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from '../clock.js';
import type { SimulatedService } from './simulatedService.js';

/**
 * The node:http transport of the simulated service. Latency is slept on the injected clock, so a
 * test on a ManualClock decides when a slow response lands, and close() never waits for it.
 */
export class SimulatorServer {
  private readonly shutdown = new AbortController();
  private closing: Promise<void> | undefined;

  private readonly server: Server;
  private baseUrl = '';

  private constructor(
    private readonly service: SimulatedService,
    private readonly clock: Clock,
  ) {
    this.server = createServer((req, res) => this.respond(req, res));
  }

  static async listen(service: SimulatedService, clock: Clock, host: string, port: number): Promise<SimulatorServer> {
    const instance = new SimulatorServer(service, clock);
    const { server } = instance;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const address = server.address() as AddressInfo;
    const hostPart = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    instance.baseUrl = `http://${hostPart}:${address.port}`;
    return instance;
  }

  /** Base URL such as http://127.0.0.1:PORT; still readable after close. */
  get url(): string {
    return this.baseUrl;
  }

  /** Stops listening, drops open connections and abandons delayed responses. Idempotent. */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      this.shutdown.abort();
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
    return this.closing;
  }

  private respond(req: IncomingMessage, res: ServerResponse): void {
    // Bodies are never read (writes are not simulated); drain them so the connection stays usable.
    req.resume();
    const response = this.service.handle({
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
    if (response.delayMs <= 0) {
      send();
      return;
    }
    // The only way the sleep fails is close() aborting it: the connection is going away anyway.
    this.clock.sleep(response.delayMs, this.shutdown.signal).then(send, () => res.destroy());
  }
}
