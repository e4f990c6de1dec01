import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { ServiceClient } from '../../src/api/serviceClient.js';
import { systemClock } from '../../src/clock.js';

/** A loopback stand-in for the service that answers `{}` to everything and counts what reached it. */
export interface CountingService {
  readonly url: string;
  readonly requests: () => number;
  readonly close: () => Promise<void>;
}

export async function startCountingService(): Promise<CountingService> {
  let requests = 0;
  const server = createServer((_req, res) => {
    requests++;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * A service client with no gate to wait on, its requests checked by `requestGuard`. `timeoutMs`
 * bounds each request: a test whose answers take real CPU to write and parse (megabytes of entries)
 * gives one its own timeout cannot reach on a loaded machine.
 */
export function guardedClient(
  url: string,
  requestGuard: () => void,
  maxResponseBytes = 1024,
  timeoutMs = 5_000,
): ServiceClient {
  return new ServiceClient({
    baseUrl: url,
    apiKey: () => 'key',
    credentialSource: 'test',
    userAgent: 'test',
    timeoutMs,
    maxResponseBytes,
    clock: systemClock,
    gate: { acquire: () => Promise.resolve(), observe: () => undefined },
    logger: pino({ level: 'silent' }),
    requestGuard,
  });
}
