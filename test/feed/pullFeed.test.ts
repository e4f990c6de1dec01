import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../support/manualClock.js';
import { until } from '../support/daemonProcess.js';
import { formatCursor } from '../../src/feed/feedCursor.js';
import { appendEvents, OTHER_TOKEN, startFeed, TOKEN, type FeedHarness } from './feedHarness.js';

const harnesses: FeedHarness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.close();
});

async function feedOf(count: number, options: Parameters<typeof startFeed>[1] = {}): Promise<FeedHarness> {
  const h = await startFeed(count, options);
  harnesses.push(h);
  return h;
}

interface Page {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown>[] | Record<string, unknown>;
}

async function get(h: FeedHarness, path: string, token: string | null = TOKEN): Promise<Page> {
  const res = await request(`${h.server.url}${path}`, {
    headers: token === null ? {} : { authorization: `Bearer ${token}` },
  });
  return { status: res.statusCode, headers: res.headers, body: (await res.body.json()) as Page['body'] };
}

const events = (page: Page) => page.body as Record<string, unknown>[];

describe('GET /v1/events', () => {
  it('pages through the journal in ingestion order, each event with its cursor, following Link', async () => {
    const h = await feedOf(250);
    const expected = h.store.db.prepare('SELECT event_id AS id FROM events ORDER BY seq').all() as { id: string }[];
    const seen: string[] = [];
    let path = '/v1/events?limit=100';
    for (let i = 0; i < 4; i++) {
      const page = await get(h, path);
      expect(page.status).toBe(200);
      expect(page.headers['content-type']).toBe('application/cloudevents-batch+json; charset=utf-8');
      const link = /^<([^>]+)>; rel="next"$/.exec(String(page.headers.link))?.[1];
      expect(link).toBeDefined();
      const batch = events(page);
      for (const e of batch) seen.push(e.id as string);
      if (batch.length > 0) {
        expect(batch.at(-1)?.sequence).toBe(page.headers['changefeed-cursor']);
        expect(batch[0]).toMatchObject({ specversion: '1.0', datacontenttype: 'application/json' });
      }
      path = link!;
    }
    expect(seen).toEqual(expected.map((e) => e.id));
    // The last page was empty: its cursor stays at the head.
    expect(path).toContain(`after=${formatCursor(250)}`);
  });

  it('filters by log and type glob, and the cursor moves past events that do not match', async () => {
    const h = await feedOf(20);
    await appendEvents(h, 3, 'identity_provider', 'user_created');
    await appendEvents(h, 2, 'career', 'level_removed');
    const idp = await get(h, '/v1/events?log=identity_provider');
    expect(events(idp).map((e) => e.type)).toEqual(
      Array(3).fill('com.skills.changefeed.identity_provider.user_created'),
    );
    expect(idp.headers.warning).toBeUndefined();
    expect(String(idp.headers.link)).toContain('log=identity_provider');
    const removed = await get(h, '/v1/events?type=*.career.level_remov?d');
    expect(events(removed)).toHaveLength(2);
    expect(removed.headers['changefeed-cursor']).toBe(formatCursor(25));
    const none = await get(h, '/v1/events?type=*.skill.*');
    expect(events(none)).toEqual([]);
    expect(none.headers['changefeed-cursor']).toBe(formatCursor(25));
  });

  it('takes the deprecated log=identityProvider with a Warning, and links on with identity_provider', async () => {
    const h = await feedOf(5);
    await appendEvents(h, 2, 'identity_provider', 'user_created');
    const page = await get(h, '/v1/events?log=identityProvider');
    expect(page.status).toBe(200);
    expect(events(page).map((e) => e.type)).toEqual(
      Array(2).fill('com.skills.changefeed.identity_provider.user_created'),
    );
    expect(page.headers.warning).toBe('299 changefeed "log=identityProvider is deprecated; use log=identity_provider"');
    expect(String(page.headers.link)).toContain('log=identity_provider');
    const unknown = await get(h, '/v1/events?log=identity-provider');
    expect(unknown.status).toBe(400);
  });

  it.each([
    ['after=abc', 'after'],
    ['after=-1', 'after'],
    ['after=99999999999999999', 'after'],
    ['limit=0', 'limit'],
    ['limit=1001', 'limit'],
    ['limit=1.5', 'limit'],
    ['wait=31', 'wait'],
    ['wait=x', 'wait'],
    ['log=people', 'log'],
    ['type=com.[a]*', 'type'],
    ['type=', 'type'],
    ['limit=1&limit=2', 'limit'],
    ['cursor=5', 'cursor'],
  ])('answers 400 naming the parameter for %s', async (query, name) => {
    const h = await feedOf(1);
    const page = await get(h, `/v1/events?${query}`);
    expect(page.status).toBe(400);
    expect(page.headers['content-type']).toBe('application/problem+json');
    expect(page.body).toMatchObject({ status: 400, 'invalid-params': [{ name }] });
    expect((page.body as { detail: string }).detail).toMatch(new RegExp(`^${name}: `));
  });

  it('answers 401 without a token or with a wrong one, and takes every configured token', async () => {
    const h = await feedOf(1);
    expect((await get(h, '/v1/events', null)).status).toBe(401);
    expect((await get(h, '/v1/events', `${TOKEN}x`)).status).toBe(401);
    expect((await get(h, '/v1/events', TOKEN.slice(0, -1))).status).toBe(401);
    const wrong = await get(h, '/v1/events/stream', 'nope');
    expect(wrong.status).toBe(401);
    expect(wrong.headers['www-authenticate']).toBe('Bearer realm="changefeed"');
    expect((await get(h, '/v1/events', OTHER_TOKEN)).status).toBe(200);
  });

  it('answers 410 with the oldest complete cursor when events after the cursor were pruned', async () => {
    const h = await feedOf(30);
    await h.store.outbox.markDelivered(
      'file',
      Array.from({ length: 20 }, (_, i) => i + 1),
      Date.now(),
    );
    expect(await h.store.outbox.prune(Date.now() + 1)).toBe(20);
    const gone = await get(h, '/v1/events?after=5');
    expect(gone.status).toBe(410);
    expect(gone.body).toMatchObject({ status: 410, oldestCursor: formatCursor(20) });
    const resumed = await get(h, `/v1/events?after=${formatCursor(20)}`);
    expect(events(resumed)).toHaveLength(10);
    // No cursor: from the oldest complete one, without a 410.
    expect(events(await get(h, '/v1/events'))).toHaveLength(10);
    const ahead = await get(h, '/v1/events?after=31');
    expect(ahead.status).toBe(410);
    expect((ahead.body as { detail: string }).detail).toContain('ahead of this journal');
  });

  it('long-polls: answers as soon as an event is appended, or empty once the wait is over', async () => {
    const clock = new ManualClock(Date.now());
    const h = await feedOf(5, { clock });
    const waiting = get(h, `/v1/events?after=${formatCursor(5)}&wait=30`);
    // The request is waiting once it sleeps on the clock.
    await until(() => clock.nextWakeAt() !== undefined, 30_000, 'the long-poll to wait');
    await appendEvents(h, 2);
    const woken = await waiting;
    expect(events(woken)).toHaveLength(2);

    const idle = get(h, `/v1/events?after=${formatCursor(7)}&wait=30`);
    await until(() => clock.nextWakeAt() !== undefined, 30_000, 'the long-poll to wait');
    await clock.advance(30_000);
    const empty = await idle;
    expect(empty.status).toBe(200);
    expect(events(empty)).toEqual([]);
    expect(empty.headers['changefeed-cursor']).toBe(formatCursor(7));
  });

  it('answers a waiting long-poll with an empty page when its tenant stops here, so the client asks again', async () => {
    const clock = new ManualClock(Date.now());
    const h = await feedOf(5, { clock });
    const waiting = get(h, `/v1/events?after=${formatCursor(5)}&wait=30`);
    await until(() => clock.nextWakeAt() !== undefined, 30_000, 'the long-poll to wait');
    // The tenant is handed over or removed: the process and its listener go on.
    h.feed.close();
    // The wait is on the ManualClock, which never moves here: only the close can answer it (a
    // hang fails on the test's timeout, not on a wall-clock race a loaded machine can lose).
    const answered = await waiting;
    expect(answered.status).toBe(200);
    expect(events(answered)).toEqual([]);
    expect(answered.headers['changefeed-cursor']).toBe(formatCursor(5));
  });
});
