import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { httpConfigSchema, startHealthServer, type HealthServer } from '../../src/observe/healthServer.js';
import { ProcessMetrics } from '../../src/observe/processMetrics.js';
import type { ChangefeedStore } from '../../src/store/changefeedStore.js';
import { until } from '../support/daemonProcess.js';

let server: HealthServer | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await server?.close();
});

/** A keep-alive connection that has had one answer: the server has certainly accepted it. */
async function heldConnection(url: URL): Promise<Socket> {
  const socket = connect(Number(url.port), url.hostname);
  sockets.push(socket);
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.once('data', () => resolve());
    socket.write(`GET /healthz HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`);
  });
  return socket;
}

/** Whether a new connection gets an answer (true) or is closed unanswered (false). */
function answers(url: URL): Promise<boolean> {
  const socket = connect(Number(url.port), url.hostname);
  sockets.push(socket);
  return new Promise((resolve) => {
    socket.once('data', () => resolve(true));
    socket.once('close', () => resolve(false));
    socket.on('error', () => undefined);
    socket.write(`GET /healthz HTTP/1.1\r\nHost: ${url.host}\r\nConnection: close\r\n\r\n`);
  });
}

describe('the health server', () => {
  it('holds no more than http.maxConnections connections: one more is closed on arrival, unanswered', async () => {
    server = await startHealthServer(httpConfigSchema.parse({ port: 0, maxConnections: 2 }), {
      alive: () => true,
      readiness: () => [],
      metrics: new ProcessMetrics(),
    });
    const url = new URL(server.url);
    const first = await heldConnection(url);
    await heldConnection(url);

    expect(await answers(url)).toBe(false);

    // A held connection that goes frees its place.
    first.destroy();
    await until(() => answers(url), 30_000, 'a new connection answered once one was released');
  });

  it('closes a connection that sends no request head within http.headersTimeoutSeconds: silent sockets cannot starve /healthz', async () => {
    server = await startHealthServer(httpConfigSchema.parse({ port: 0, maxConnections: 2, headersTimeoutSeconds: 1 }), {
      alive: () => true,
      readiness: () => [],
      metrics: new ProcessMetrics(),
    });
    const url = new URL(server.url);
    // One silent from the start, one that sends half a request head and stops.
    const silent = connect(Number(url.port), url.hostname);
    const slow = connect(Number(url.port), url.hostname);
    for (const s of [silent, slow]) {
      sockets.push(s);
      s.on('error', () => undefined);
      // Whichever comes first at the timeout, our timer (no bytes) or Node's header check (a 408
      // response), closes the socket; unread bytes would hold back its 'end' and 'close' forever.
      s.resume();
    }
    slow.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
    // Both closed is the point: without the bound Node waits its own 60 s for a head, past the
    // test's timeout. No wall-clock limit of our own, which a loaded machine could reach first.
    await Promise.all([silent, slow].map((s) => new Promise((resolve) => s.once('close', resolve))));
    expect(await answers(url)).toBe(true);
  }, 30_000);

  // A scraper that left (Prometheus past its scrape timeout) was still rendered every metric after,
  // each scrape gauge reading every tenant's store for nobody.
  it('stops rendering /metrics once the scraper has left: no store is read for it after', async () => {
    let logReads = 0;
    let sinksAsked: () => void = () => undefined;
    const asked = new Promise<void>((resolve) => (sinksAsked = resolve));
    let answerSinks: () => void = () => undefined;
    const store = {
      sinks: {
        list: () =>
          new Promise((resolve) => {
            answerSinks = () => resolve([{ name: 'hook', active: true }]);
            sinksAsked();
          }),
      },
      outbox: {
        counts: () =>
          Promise.resolve({ pending: 1, delivered: 0, dead: 0, filtered: 0, oldestPendingIngestedAt: null }),
      },
      watchedLogs: {
        coverage: () => {
          logReads += 1;
          return Promise.resolve([]);
        },
      },
    } as unknown as ChangefeedStore;
    const metrics = new ProcessMetrics();
    metrics.tenants.forTenant('acme').attach({ store, now: () => 0, allowancePerHour: () => 100 });
    server = await startHealthServer(httpConfigSchema.parse({ port: 0, maxConnections: 1 }), {
      alive: () => true,
      readiness: () => [],
      metrics,
    });
    const url = new URL(server.url);
    const scraper = connect(Number(url.port), url.hostname);
    sockets.push(scraper);
    scraper.on('error', () => undefined);
    scraper.write(`GET /metrics HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`);
    await asked;
    scraper.destroy();
    // The one place under maxConnections is free again once the server has seen the scraper go.
    await until(() => answers(url), 30_000, 'a new connection answered once the scraper left');

    answerSinks();
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(logReads).toBe(0);
  });

  // An HTTP/1.0 response ends where its connection closes: cut short after a 200, it read as a
  // whole exposition with the rest of the series missing.
  it('answers an HTTP/1.0 scraper 500 when the exposition fails after its first part, not a short 200', async () => {
    server = await startHealthServer(httpConfigSchema.parse({ port: 0 }), {
      alive: () => true,
      readiness: () => [],
      metrics: {
        contentType: 'text/plain; version=0.0.4',
        async write(write) {
          await write('changefeed_build_info{version="x"} 1\n');
          throw new Error('the store refused');
        },
      },
    });
    const url = new URL(server.url);
    const scraper = connect(Number(url.port), url.hostname);
    sockets.push(scraper);
    let answer = '';
    scraper.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    const closed = new Promise((resolve) => scraper.once('close', resolve));
    scraper.write(`GET /metrics HTTP/1.0\r\nHost: ${url.host}\r\n\r\n`);
    await closed;
    expect(answer).toMatch(/^HTTP\/1\.1 500 /);
    expect(answer).not.toContain('changefeed_build_info');
  });
});

describe('the health server against a client that pipelines', () => {
  /** A /metrics source that counts the scrapes being rendered, each a few parts with a wait between. */
  function countedMetrics() {
    const counts = { started: 0, active: 0, peak: 0 };
    const metrics = {
      contentType: 'text/plain; version=0.0.4',
      write: async (write: (part: string) => Promise<void>) => {
        counts.started++;
        counts.peak = Math.max(counts.peak, ++counts.active);
        try {
          for (let i = 0; i < 3; i++) {
            // As a store read would: the next part comes from another turn of the event loop.
            await new Promise((resolve) => setImmediate(resolve));
            await write(`part_${i} 1\n`);
          }
        } finally {
          counts.active--;
        }
      },
    };
    return { counts, metrics };
  }

  it('renders the scrapes one connection pipelines one at a time, and answers each in order', async () => {
    const { counts, metrics } = countedMetrics();
    server = await startHealthServer(httpConfigSchema.parse({ port: 0 }), {
      alive: () => true,
      readiness: () => [],
      metrics,
    });
    const url = new URL(server.url);
    const socket = connect(Number(url.port), url.hostname);
    sockets.push(socket);
    let received = '';
    const answered = new Promise<void>((resolve) =>
      socket.on('data', (chunk: Buffer) => {
        received += chunk.toString('latin1');
        if (received.split('part_2 1\n').length - 1 === 8) resolve();
      }),
    );
    socket.write(`GET /metrics HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`.repeat(8));
    await answered;
    expect(counts.started).toBe(8);
    expect(counts.peak).toBe(1);
    expect(received.match(/^HTTP\/1\.1 200 /gm)).toHaveLength(8);
  });

  it('closes a connection that pipelines more requests ahead than it may, before they are rendered', async () => {
    const { counts, metrics } = countedMetrics();
    server = await startHealthServer(httpConfigSchema.parse({ port: 0 }), {
      alive: () => true,
      readiness: () => [],
      metrics,
    });
    const url = new URL(server.url);
    const socket = connect(Number(url.port), url.hostname);
    sockets.push(socket);
    socket.on('error', () => undefined);
    socket.resume();
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    // 500 scrapes in one write, one packet: each of them would read every tenant's store.
    socket.write(`GET /metrics HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`.repeat(500));
    await closed;
    expect(counts.started).toBeLessThanOrEqual(1);
    expect(await answers(url)).toBe(true);
  });
});
