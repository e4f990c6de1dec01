import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ServiceClient } from '../../src/api/serviceClient.js';
import { systemClock } from '../../src/clock.js';
import { LeaseLostError } from '../../src/cluster/writeFence.js';

let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

async function countingServer(): Promise<{ url: string; requests: () => number }> {
  let requests = 0;
  server = createServer((_req, res) => {
    requests++;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests: () => requests };
}

function clientOf(url: string, requestGuard: () => void): ServiceClient {
  return new ServiceClient({
    baseUrl: url,
    apiKey: () => 'key',
    credentialSource: 'test',
    userAgent: 'test',
    timeoutMs: 5_000,
    maxResponseBytes: 1024,
    clock: systemClock,
    gate: { acquire: () => Promise.resolve(), observe: () => undefined },
    logger: pino({ level: 'silent' }),
    requestGuard,
  });
}

describe('the request guard of a service client', () => {
  it('is asked again as the request is written: a lease lost while it waited for its connection sends nothing', async () => {
    const { url, requests } = await countingServer();
    // Passes when the request is handed to the pool, refuses by the time the pool writes it (a
    // replica paused while its connection was being opened, resumed past its lease).
    let asked = 0;
    const client = clientOf(url, () => {
      if (++asked > 1) throw new LeaseLostError('acme', 'past its local deadline');
    });
    try {
      await expect(client.getJson('/api/v1/ping', {}, 'poll')).rejects.toMatchObject({ code: 'LEASE_LOST' });
      expect(asked).toBe(2);
      expect(requests()).toBe(0);
    } finally {
      await client.close();
    }
  });

  it('lets a request through when the lease holds at both checks', async () => {
    const { url, requests } = await countingServer();
    let asked = 0;
    const client = clientOf(url, () => {
      asked++;
    });
    try {
      await client.getJson('/api/v1/ping', {}, 'poll');
      expect(asked).toBe(2);
      expect(requests()).toBe(1);
    } finally {
      await client.close();
    }
  });
});
