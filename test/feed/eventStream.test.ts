import type { EventSource } from 'eventsource';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../support/manualClock.js';
import { formatCursor } from '../../src/feed/feedCursor.js';
import { until } from '../support/daemonProcess.js';
import { appendEvents, openEventSource, OTHER_TOKEN, startFeed, TOKEN, type FeedHarness } from './feedHarness.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function feedOf(count: number, options: Parameters<typeof startFeed>[1] = {}): Promise<FeedHarness> {
  const h = await startFeed(count, options);
  cleanups.push(() => h.close());
  return h;
}

interface Received {
  id: string;
  data: string;
}

/** Collects a stream's messages; `until(n)` resolves once `n` arrived. */
function collect(source: EventSource) {
  const received: Received[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  let opened = 0;
  source.addEventListener('open', () => opened++);
  source.addEventListener('message', (event) => {
    received.push({ id: event.lastEventId, data: event.data as string });
    for (const w of waiters.filter((x) => received.length >= x.n)) w.resolve();
  });
  return {
    received,
    opens: () => opened,
    until: (n: number) =>
      received.length >= n ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ n, resolve })),
  };
}

const journal = (h: FeedHarness) =>
  h.store.db.prepare('SELECT seq, payload FROM events ORDER BY seq').all() as { seq: number; payload: string }[];

describe('GET /v1/events/stream', () => {
  it('sends every event with its cursor as id and the stored CloudEvent as data, then live ones', async () => {
    const h = await feedOf(1_200);
    const source = openEventSource(`${h.server.url}/v1/events/stream`);
    cleanups.push(() => source.close());
    const stream = collect(source);
    await stream.until(1_200);
    await appendEvents(h, 5);
    await stream.until(1_205);
    expect(stream.received).toEqual(journal(h).map((e) => ({ id: formatCursor(e.seq), data: e.payload })));
  });

  it('resumes after the Last-Event-ID it reconnects with: nothing lost, nothing repeated', async () => {
    const h = await feedOf(300);
    const source = openEventSource(`${h.server.url}/v1/events/stream?type=com.skills.*`);
    cleanups.push(() => source.close());
    const stream = collect(source);
    await stream.until(300);
    // The server ends every stream (as a restart would); the client reconnects by itself.
    h.feed.close();
    await appendEvents(h, 40);
    await stream.until(340);
    expect(stream.opens()).toBe(2);
    expect(stream.received.map((r) => r.id)).toEqual(journal(h).map((e) => formatCursor(e.seq)));
  });

  it('starts after a Last-Event-ID sent on the first request, ahead of after=', async () => {
    const h = await feedOf(50);
    const res = await request(`${h.server.url}/v1/events/stream?after=3`, {
      headers: { authorization: `Bearer ${TOKEN}`, 'last-event-id': formatCursor(45) },
    });
    res.body.on('error', () => undefined);
    let text = '';
    for await (const chunk of res.body) {
      text += (chunk as Buffer).toString();
      if ((text.match(/^id: /gm) ?? []).length >= 5) break;
    }
    res.body.destroy();
    expect([...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]))).toEqual([46, 47, 48, 49, 50]);
  });

  it('sends a heartbeat comment when idle for heartbeatSeconds', async () => {
    const clock = new ManualClock(Date.now());
    const h = await feedOf(2, { clock, config: { heartbeatSeconds: 15 } });
    const res = await request(`${h.server.url}/v1/events/stream`, { headers: { authorization: `Bearer ${TOKEN}` } });
    res.body.on('error', () => undefined);
    expect(res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    let text = '';
    const reading = (async () => {
      for await (const chunk of res.body) {
        text += (chunk as Buffer).toString();
        if (text.includes(': heartbeat')) return;
      }
    })();
    await until(() => text.includes('id: 0000000000000002'), 30_000, 'the two events');
    await until(() => clock.nextWakeAt() !== undefined, 30_000, 'the stream to wait for events');
    expect(text).not.toContain('heartbeat');
    await clock.advance(15_000);
    await reading;
    res.body.destroy();
    expect(text).toMatch(/^retry: 1000\n\nid: 0+1\ndata: .*\n\nid: 0+2\ndata: .*\n\n: heartbeat\n\n$/s);
  });

  it('refuses a stream beyond feed.maxStreamsPerToken with 429, counting per token', async () => {
    const h = await feedOf(1, { config: { maxStreamsPerToken: 2 } });
    const open = async (token: string) => {
      const res = await request(`${h.server.url}/v1/events/stream`, { headers: { authorization: `Bearer ${token}` } });
      res.body.on('error', () => undefined);
      cleanups.push(() => void res.body.destroy());
      return res;
    };
    const first = await open(TOKEN);
    await open(TOKEN);
    const third = await open(TOKEN);
    expect(third.statusCode).toBe(429);
    expect(await third.body.json()).toMatchObject({ status: 429, type: '/v1/problems/too-many-streams' });
    expect((await open(OTHER_TOKEN)).statusCode).toBe(200);
    first.body.destroy();
    // The slot is given back once the server sees the connection close.
    await until(async () => (await open(TOKEN)).statusCode === 200, 30_000, 'a freed stream slot');
  });
});
