import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { acquireServicePool } from '../../src/api/servicePools.js';
import { RecordingGate, clientFor } from './loopbackService.js';

/** A service that answers `{}` and keeps every connection it accepted, to count them. */
async function connectionCountingService(): Promise<{ url: string; sockets: Socket[]; server: Server }> {
  const sockets: Socket[] = [];
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  server.on('connection', (socket: Socket) => sockets.push(socket));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, sockets, server };
}

/**
 * A turn of the event loop: undici frees a connection just after the body it carried ends, so a
 * request sent in the same turn would open another.
 */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

describe('the process-wide pool per service origin', () => {
  it('serves the clients of many tenants over one connection when their requests take turns', async () => {
    const service = await connectionCountingService();
    servers.push(service.server);
    const clients = [1, 2, 3].map(() => clientFor(service.url, new RecordingGate()));
    for (const client of clients) {
      await client.getJson('/api/v1/ping', {}, 'poll');
      await nextTurn();
    }
    expect(service.sockets).toHaveLength(1);
    for (const client of clients) await client.close();
  });

  it('stays open while a client holds it and closes its connections with the last client', async () => {
    const service = await connectionCountingService();
    servers.push(service.server);
    const [first, second] = [clientFor(service.url, new RecordingGate()), clientFor(service.url, new RecordingGate())];
    await first.getJson('/api/v1/ping', {}, 'poll');
    await nextTurn();
    const [socket] = service.sockets;
    await first.close();
    await first.close();
    await second.getJson('/api/v1/ping', {}, 'poll');
    expect(service.sockets).toEqual([socket]);
    const closed = once(socket as Socket, 'close');
    await second.close();
    await closed;
    // A client created after the pool closed gets a fresh one.
    const third = clientFor(service.url, new RecordingGate());
    await third.getJson('/api/v1/ping', {}, 'poll');
    expect(service.sockets).toHaveLength(2);
    await third.close();
  });

  it('keeps clients of different timeouts or CAs apart', async () => {
    const origin = 'http://127.0.0.1:9';
    const leases = [
      acquireServicePool(origin, { timeoutMs: 1_000 }),
      acquireServicePool(origin, { timeoutMs: 1_000 }),
      acquireServicePool(origin, { timeoutMs: 2_000 }),
      acquireServicePool(origin, { timeoutMs: 1_000, ca: 'pem' }),
    ];
    const pools = leases.map((lease) => lease.pool);
    expect(pools[0]).toBe(pools[1]);
    expect(new Set(pools).size).toBe(3);
    await Promise.all(leases.map((lease) => lease.release()));
  });
});
