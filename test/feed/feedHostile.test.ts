import { connect } from 'node:net';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../support/manualClock.js';
import { formatCursor } from '../../src/feed/feedCursor.js';
import { until } from '../support/daemonProcess.js';
import { feedConfigSchema } from '../../src/feed/feedConfig.js';
import { EventFeed } from '../../src/feed/eventFeed.js';
import { systemClock } from '../../src/clock.js';
import {
  appendEvents,
  openEventSource,
  OTHER_TOKEN,
  serveFeeds,
  startFeed,
  TOKEN,
  type FeedHarness,
} from './feedHarness.js';

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

  it('refuses a long-poll beyond feed.maxStreamsPerToken waiting ones, and frees its place on disconnect', async () => {
    const clock = new ManualClock(Date.now());
    // One page at a time per token: long-polls that wait do not hold it.
    const h = await feedOf(5, { clock, config: { maxStreamsPerToken: 2, maxPagesPerToken: 1 } });
    const now = clock.now();
    const poll = (wait: number, token = TOKEN, signal?: AbortSignal) =>
      request(`${h.server.url}/v1/events?after=${formatCursor(5)}&wait=${wait}`, {
        headers: { authorization: `Bearer ${token}` },
        // A long-poll that waits instead of being refused fails the test here, not at its timeout.
        headersTimeout: 10_000,
        ...(signal ? { signal } : {}),
      });
    // Each wait wakes at its own time, so the earliest wake-up shows the latest to start waiting.
    const first = poll(20);
    await until(() => clock.nextWakeAt() === now + 20_000, 30_000, 'the first long-poll to wait');
    const abort = new AbortController();
    const second = poll(10, TOKEN, abort.signal).catch(() => undefined);
    await until(() => clock.nextWakeAt() === now + 10_000, 30_000, 'the second long-poll to wait');
    const refused = await poll(5);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('5');
    expect(await refused.body.json()).toMatchObject({ type: '/v1/problems/too-many-waits', status: 429 });
    // Another token has its own places; a page that needs no wait is not refused by the waiting ones.
    const other = poll(15, OTHER_TOKEN);
    await until(() => clock.nextWakeAt() === now + 10_000, 30_000, 'the other token to wait');
    const noWait = await request(`${h.server.url}/v1/events?after=0&wait=5`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(noWait.statusCode).toBe(200);
    await noWait.body.dump();
    // A client that gives up frees its place.
    abort.abort();
    await second;
    await until(() => clock.nextWakeAt() === now + 15_000, 30_000, 'the server to see the disconnect');
    const third = poll(12);
    await until(() => clock.nextWakeAt() === now + 12_000, 30_000, 'a long-poll to wait in the freed place');
    await appendEvents(h, 1);
    for (const answered of [await first, await other, await third]) {
      expect(answered.statusCode).toBe(200);
      expect(await answered.body.json()).toHaveLength(1);
    }
  });

  it('bounds a page of large events by bytes, and the next page continues where it stopped', async () => {
    const h = await feedOf(0);
    // Six entries of 3 MiB each (under api.maxEntryBytes at 16 MiB): 18 MiB asked for as one page.
    await appendEvents(h, 6, 'career', 'level_added', 'x'.repeat(3 * 1024 * 1024));
    const ids: string[] = [];
    let path = '/v1/events?limit=10';
    for (let pages = 0; pages < 6 && ids.length < 6; pages++) {
      const res = await request(`${h.server.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
      const page = (await res.body.json()) as { id: string }[];
      expect(page.length).toBeGreaterThan(0);
      expect(page.length).toBeLessThan(6);
      ids.push(...page.map((e) => e.id));
      path = /^<([^>]+)>/.exec(String(res.headers.link))![1]!;
    }
    const stored = h.store.db.prepare('SELECT event_id AS id FROM events ORDER BY seq').all() as { id: string }[];
    expect(ids).toEqual(stored.map((e) => e.id));
  });

  it('holds a page its client does not read against feed.maxPagesPerToken, and cuts it off after feed.writeTimeoutSeconds', async () => {
    const config = { maxPagesPerToken: 1, writeTimeoutSeconds: 1, maxPageBytes: 32 * 1024 * 1024 };
    const h = await feedOf(0, { config });
    // A page of 18 MiB: more than the socket buffers of both ends take, so some of it stays with
    // the feed until the client reads.
    await appendEvents(h, 6, 'career', 'level_added', 'x'.repeat(3 * 1024 * 1024));
    // The feed behind a server that tells when the answer of the client that does not read ends.
    let firstEnded: () => void = () => undefined;
    const ended = new Promise<void>((resolve) => (firstEnded = resolve));
    const server = await serveFeeds(
      { default: h.feed },
      {
        config,
        around: (req, res, next) => {
          if (req.url === '/v1/events?limit=10') res.once('close', firstEnded);
          next();
        },
      },
    );
    const { hostname, port } = new URL(server.url);
    const silent = connect(Number(port), hostname);
    silent.pause();
    silent.on('error', () => undefined);
    // Its answer has begun: the page was read from the store and is being written.
    const answering = new Promise<void>((resolve) => silent.once('readable', resolve));
    silent.write(`GET /v1/events?limit=10 HTTP/1.1\r\nHost: feed\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`);
    await answering;
    try {
      // The page the client does not take still holds the token's one place: no client can make
      // the feed hold more than maxPagesPerToken * maxPageBytes by leaving its pages unread.
      const next = await request(`${server.url}/v1/events?limit=1`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(next.statusCode).toBe(429);
      expect(await next.body.json()).toMatchObject({ type: '/v1/problems/too-many-pages' });
      await ended;
      // Cut off: what the client reads now ends short of the page it was promised.
      let received = 0;
      silent.on('data', (chunk: Buffer) => (received += chunk.length));
      await new Promise((resolve) => silent.once('close', resolve));
      expect(received).toBeLessThan(18 * 1024 * 1024);
      const freed = await request(`${server.url}/v1/events?limit=1`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(freed.statusCode).toBe(200);
      expect(((await freed.body.json()) as unknown[]).length).toBe(1);
    } finally {
      silent.destroy();
      await server.close();
    }
  });

  it('answers a journal it cannot read 503 without the store error, which goes to the log', async () => {
    const h = await feedOf(3);
    const warnings: unknown[] = [];
    const logger = { warn: (fields: unknown) => void warnings.push(fields) };
    const feed = new EventFeed(
      feedConfigSchema.parse({ enabled: true, port: 0 }),
      h.store.journal,
      systemClock,
      undefined,
      logger,
    );
    const server = await serveFeeds({ default: feed });
    try {
      await h.store.close();
      const res = await request(`${server.url}/v1/events`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(res.statusCode).toBe(503);
      const problem = (await res.body.json()) as { type: string; detail: string };
      expect(problem.type).toBe('/v1/problems/journal-unavailable');
      // A tenant's consumer holds a feed token; what the store says may name the database and its host.
      expect(problem.detail).not.toContain('database connection');
      expect(problem.detail).toContain('the daemon log says why');
      expect(JSON.stringify(warnings)).toContain('The database connection is not open');
    } finally {
      await server.close();
    }
  });

  it('writes a stream of large events in bounded pieces, every event once and in order', async () => {
    const h = await feedOf(0);
    await appendEvents(h, 6, 'career', 'level_added', 'x'.repeat(3 * 1024 * 1024));
    // The feed behind a server that records the largest single write of the stream.
    let largestWrite = 0;
    const server = await serveFeeds(
      { default: h.feed },
      {
        around: (req, res, next) => {
          const write = res.write.bind(res) as (chunk: string) => boolean;
          res.write = ((chunk: string) => {
            largestWrite = Math.max(largestWrite, chunk.length);
            return write(chunk);
          }) as typeof res.write;
          next();
        },
      },
    );
    const source = openEventSource(`${server.url}/v1/events/stream`);
    const ids: string[] = [];
    await new Promise<void>((resolve) =>
      source.addEventListener('message', (message) => {
        ids.push(message.lastEventId);
        if (ids.length === 6) resolve();
      }),
    );
    source.close();
    await server.close();
    expect(ids).toEqual([1, 2, 3, 4, 5, 6].map(formatCursor));
    expect(largestWrite).toBeLessThanOrEqual(feedConfigSchema.parse({}).maxPageBytes + 1024);
  });
});
