import { connect } from 'node:net';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { startFeed, TOKEN, type FeedHarness } from './feedHarness.js';

const harnesses: FeedHarness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.close();
});

async function feedOf(count: number, options: Parameters<typeof startFeed>[1] = {}): Promise<FeedHarness> {
  const h = await startFeed(count, options);
  harnesses.push(h);
  return h;
}

/** Sends `head` as written (no client tidies it up) and resolves with the status line, '' when none came. */
function rawRequest(url: string, head: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    let received = '';
    const socket = connect(Number(port), hostname, () => socket.write(head));
    socket.setTimeout(2_000, () => socket.destroy());
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(received.split('\r\n')[0] ?? ''));
  });
}

describe('the feed against hostile clients', () => {
  it.each(['http://[', 'http://feed:99999/v1/events', '//[/v1/events'])(
    'answers a request target the URL parser refuses (%s) and keeps serving',
    async (target) => {
      const h = await feedOf(3);
      const status = await rawRequest(h.server.url, `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      expect(status).toMatch(/^HTTP\/1\.1 (400|404) /);
      const page = await request(`${h.server.url}/v1/events`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(page.statusCode).toBe(200);
      await page.body.dump();
    },
  );
});
