import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { appConfigSchema } from '../../src/config/appConfigSchema.js';
import { createDaemon } from '../support/daemonHarness.js';
import { freePort, until } from '../support/daemonProcess.js';
import { makeTempDir } from '../support/tempDir.js';
import { TOKEN } from './feedHarness.js';

const FLOOD = 300;
const CAP = 50;

/**
 * Opens a TCP connection that never sends a request; resolves once connected, records when it closes.
 * It reads what the server sends: at the head timeout the listener's own timer closes it without a
 * word, or, when the event loop runs late, Node's header check gets there first and answers 408
 * before closing. Bytes left unread hold back the socket's 'end', so it would never close here
 * although the server had closed its side and freed its place (a late loop left 50 of 300 so).
 */
function halfOpen(port: number, closed: Set<Socket>): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.resume();
    socket.on('error', () => undefined);
    socket.once('close', () => closed.add(socket));
    socket.once('error', reject);
  });
}

describe('a connection flood against the feed listener', () => {
  it('is capped and timed out there, while /healthz on the health listener keeps answering', async () => {
    const stateDir = makeTempDir();
    const httpPort = await freePort();
    const feedPort = await freePort();
    const daemon = createDaemon(
      appConfigSchema.parse({
        api: { baseUrl: 'http://127.0.0.1:1', apiKey: 'k_test_0123456789abcdef0123456789abcdef' },
        sinks: [{ name: 'file', type: 'file', path: join(stateDir, 'events.jsonl') }],
        stateDir,
        http: { port: httpPort },
        feed: { enabled: true, port: feedPort, tokens: [TOKEN], maxConnections: CAP, headersTimeoutSeconds: 1 },
      }),
    );
    const sockets: Socket[] = [];
    const closed = new Set<Socket>();
    try {
      await daemon.start();
      for (let i = 0; i < FLOOD; i++) sockets.push(await halfOpen(feedPort, closed));
      // Beyond feed.maxConnections the listener closes what arrives; the probes are on another one.
      await until(() => closed.size >= FLOOD - CAP, 30_000, 'the connections beyond the cap to be closed');
      for (let probe = 0; probe < 5; probe++) {
        const health = await request(`http://127.0.0.1:${httpPort}/healthz`);
        expect(health.statusCode).toBe(200);
        await health.body.dump();
      }
      // The ones it kept said nothing within feed.headersTimeoutSeconds: closed too, not after 60 s.
      await until(() => closed.size === FLOOD, 30_000, 'the half-open connections to time out').catch((error) => {
        throw new Error(`${(error as Error).message}: ${FLOOD - closed.size} of ${FLOOD} still open`, { cause: error });
      });
      // A request head sent a byte at a time and never finished: the same timeout.
      for (let i = 0; i < 5; i++) {
        const slow = await halfOpen(feedPort, closed);
        sockets.push(slow);
        slow.write('GET /v1/events HTTP/1.1\r\nHost: feed\r\n');
      }
      await until(() => closed.size === FLOOD + 5, 30_000, 'the unfinished request heads to time out');
      const page = await request(`http://127.0.0.1:${feedPort}/v1/events`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(page.statusCode).toBe(200);
      await page.body.dump();
    } finally {
      for (const socket of sockets) socket.destroy();
      await daemon.stop();
    }
  });
});
