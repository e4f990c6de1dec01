import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ManualClock } from '../support/manualClock.js';
import { ServiceClient, type RequestGate, type RequestPriority } from '../../src/api/serviceClient.js';
import type { ResponseMeta } from '../../src/api/responseHeaders.js';
import { noopLogger } from '../support/noopLogger.js';
import { closeAfterTest } from '../support/closeAfterTest.js';

/**
 * Clients first, then the servers they talk to: everything started in a test is closed after it,
 * by the setup file (closeAfterTest): an afterEach registered here would run for the first file of
 * a worker only, since the unit tests share their modules.
 */
const openClients: ServiceClient[] = [];
const openServices: LoopbackService[] = [];
function closeOpenedAfterTest(): void {
  if (openClients.length + openServices.length > 0) return;
  closeAfterTest(async () => {
    for (const client of openClients.splice(0)) await client.close();
    for (const service of openServices.splice(0)) await service.close();
  });
}

export interface RecordedRequest {
  method: string;
  url: URL;
  headers: IncomingHttpHeaders;
}

/** What the loopback service answers; `hang` never answers (for timeouts). */
export type CannedReply = { status: number; headers?: Record<string, string>; body?: unknown; raw?: string } | 'hang';

/**
 * A real HTTP server on 127.0.0.1 with a scripted answer per request, recording what it received.
 * Bodies given as objects are sent as JSON; `raw` is sent verbatim.
 */
export class LoopbackService {
  private constructor(
    private readonly server: Server,
    readonly url: string,
    /** Every request received, in arrival order. */
    readonly requests: RecordedRequest[],
  ) {}

  static async start(reply: (request: RecordedRequest) => CannedReply): Promise<LoopbackService> {
    const requests: RecordedRequest[] = [];
    const server = createServer((req, res) => {
      const recorded = {
        method: req.method ?? '',
        url: new URL(req.url ?? '/', 'http://loopback'),
        headers: req.headers,
      };
      requests.push(recorded);
      const answer = reply(recorded);
      if (answer === 'hang') return;
      const text = answer.raw ?? (answer.body === undefined ? '' : JSON.stringify(answer.body));
      res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
      res.end(text);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const service = new LoopbackService(server, `http://127.0.0.1:${port}`, requests);
    closeOpenedAfterTest();
    openServices.push(service);
    return service;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A RequestGate that lets everything through and remembers each call, in order. */
export class RecordingGate implements RequestGate {
  readonly acquired: RequestPriority[] = [];
  readonly observed: ResponseMeta[] = [];

  acquire(priority: RequestPriority): Promise<void> {
    this.acquired.push(priority);
    return Promise.resolve();
  }

  observe(meta: ResponseMeta): void {
    this.observed.push(meta);
  }
}

export const TEST_KEY = 'sk_test_0123456789abcdef0123456789abcdef';
export const TEST_USER_AGENT = 'skills-changefeed/0.0.0-test (loopback-test)';
/** The clock the client stamps responses with: fixed, so HTTP-date Retry-After is exact. */
export const CLIENT_NOW = Date.UTC(2026, 10, 22, 12, 0, 0);

/** A client of a loopback service, closed after the test. */
export function clientFor(
  baseUrl: string,
  gate: RequestGate,
  options: { timeoutMs?: number; credentialSource?: string; maxResponseBytes?: number } = {},
): ServiceClient {
  const client = new ServiceClient({
    baseUrl,
    apiKey: () => TEST_KEY,
    credentialSource: options.credentialSource ?? 'CHANGEFEED_API_KEY',
    userAgent: TEST_USER_AGENT,
    timeoutMs: options.timeoutMs ?? 5_000,
    maxResponseBytes: options.maxResponseBytes ?? 16 * 1024 * 1024,
    clock: new ManualClock(CLIENT_NOW),
    gate,
    logger: noopLogger,
  });
  closeOpenedAfterTest();
  openClients.push(client);
  return client;
}

/** An RFC 9457 problem document as the service sends it (spec 7). */
export function problem(
  status: number,
  slug: string,
  extra: Record<string, unknown> = {},
): { status: number; headers: Record<string, string>; body: unknown } {
  return {
    status,
    headers: { 'content-type': 'application/problem+json', 'x-request-id': `req-${status}` },
    body: {
      type: `https://errors.example/${slug}`,
      title: slug,
      status,
      detail: `detail of ${slug}`,
      instance: '/api/v1/x',
      requestId: `req-${status}`,
      ...extra,
    },
  };
}
