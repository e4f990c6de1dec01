import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { EventFeed } from '../../src/feed/eventFeed.js';
import { feedConfigSchema, type FeedConfig } from '../../src/feed/feedConfig.js';
import { formatCursor } from '../../src/feed/feedCursor.js';
import type { BoundedListener } from '../../src/boundedListener.js';
import type { FeedTokenGrant } from '../../src/feed/feedTokens.js';
import type { JournalStore } from '../../src/store/changefeedStore.js';
import type { SqliteChangefeedStore } from '../../src/store/sqlite/sqliteStore.js';
import { prefilledStore } from '../support/prefilledStore.js';
import { until } from '../support/daemonProcess.js';
import { makeTempDir } from '../support/tempDir.js';
import { appendEvents, serveFeeds, type FeedHarness } from './feedHarness.js';

const ACME = 'acme-feed-token-0123456789';
const GLOBEX = 'globex-feed-token-0123456789';
const OPERATOR = 'operator-feed-token-0123456789';
const GRANTS: FeedTokenGrant[] = [
  { token: ACME, reads: { kind: 'tenant', tenant: 'acme' } },
  { token: GLOBEX, reads: { kind: 'tenant', tenant: 'globex' } },
  { token: OPERATOR, reads: { kind: 'all' } },
];

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Tenants {
  server: BoundedListener;
  stores: Record<string, SqliteChangefeedStore>;
  feeds: Record<string, EventFeed>;
}

/**
 * A process serving the feeds of `acme` and `globex` (each its own journal of `count` events),
 * knowing `initech` runs on another replica; `journalOf` may wrap a tenant's journal.
 */
async function twoTenantFeeds(
  count: number,
  options: { config?: Partial<FeedConfig>; journalOf?: (journal: JournalStore) => JournalStore } = {},
): Promise<Tenants> {
  const config = feedConfigSchema.parse({ enabled: true, port: 0, ...options.config });
  const stores: Record<string, SqliteChangefeedStore> = {};
  const feeds: Record<string, EventFeed> = {};
  for (const tenant of ['acme', 'globex']) {
    const { store } = await prefilledStore(count, [{ name: 'file', type: 'file' }], 10, makeTempDir());
    stores[tenant] = store;
    const journal = options.journalOf ? options.journalOf(store.journal) : store.journal;
    feeds[tenant] = new EventFeed(config, journal, systemClock);
    cleanups.push(() => store.close());
  }
  const server = await serveFeeds(feeds, { config: options.config ?? {}, grants: GRANTS, elsewhere: ['initech'] });
  cleanups.push(async () => {
    for (const feed of Object.values(feeds)) feed.close();
    await server.close();
  });
  return { server, stores, feeds };
}

interface Answer {
  status: number;
  headers: Record<string, unknown>;
  body: string;
}

async function get(server: BoundedListener, path: string, token?: string): Promise<Answer> {
  const res = await request(`${server.url}${path}`, {
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  });
  const { date: _date, ...headers } = res.headers;
  return { status: res.statusCode, headers, body: await res.body.text() };
}

describe('feed access per tenant', () => {
  it("refuses a tenant's token on another tenant's feed with 404; an all-tenants token reads both", async () => {
    const { server } = await twoTenantFeeds(3);
    expect((await get(server, '/v1/tenants/acme/events', ACME)).status).toBe(200);
    const crossed = await get(server, '/v1/tenants/globex/events', ACME);
    expect(crossed.status).toBe(404);
    expect(JSON.parse(crossed.body)).toMatchObject({ type: '/v1/problems/not-found' });
    expect((await get(server, '/v1/tenants/globex/events/stream', ACME)).status).toBe(404);
    expect((await get(server, '/v1/tenants/acme/events', GLOBEX)).status).toBe(404);
    for (const tenant of ['acme', 'globex']) {
      const page = await get(server, `/v1/tenants/${tenant}/events`, OPERATOR);
      expect(page.status).toBe(200);
      expect(JSON.parse(page.body)).toHaveLength(3);
    }
    // The path of a daemon without tenants is the tenant `default`, which none of these read.
    expect((await get(server, '/v1/events', ACME)).status).toBe(404);
  });

  it('answers a known and an unknown tenant alike until a token that reads it is shown', async () => {
    const { server } = await twoTenantFeeds(1);
    // Running here, known but running elsewhere, never heard of, and not even a tenant name.
    const paths = ['acme', 'initech', 'nosuch', 'NOT_A_NAME'].map((t) => `/v1/tenants/${t}/events`);
    const compare = async (token: string | undefined, status: number) => {
      const answers = await Promise.all(paths.map((path) => get(server, path, token)));
      for (const answer of answers) expect(answer).toEqual(answers[0]);
      expect(answers[0]?.status).toBe(status);
    };
    await compare(undefined, 401);
    await compare('wrong-token-but-long-enough', 401);
    // A valid token of another tenant: the same 404 for every one of them.
    const asGlobex = await Promise.all(paths.map((path) => get(server, path, GLOBEX)));
    for (const answer of asGlobex) expect(answer).toEqual(asGlobex[0]);
    expect(asGlobex[0]?.status).toBe(404);
    expect(JSON.parse(asGlobex[0]!.body).detail).toBe('this token reads no feed at this path');
  });

  it('follows Link in tenant mode to the next page on the same tenant path', async () => {
    const { server, stores } = await twoTenantFeeds(25);
    const expected = stores.globex!.db.prepare('SELECT event_id AS id FROM events ORDER BY seq').all() as {
      id: string;
    }[];
    const seen: string[] = [];
    let path = '/v1/tenants/globex/events?limit=10';
    for (let i = 0; i < 3; i++) {
      const page = await get(server, path, GLOBEX);
      expect(page.status).toBe(200);
      for (const event of JSON.parse(page.body) as { id: string }[]) seen.push(event.id);
      path = /^<([^>]+)>; rel="next"$/.exec(String(page.headers.link))![1]!;
      expect(path.startsWith('/v1/tenants/globex/events?after=')).toBe(true);
    }
    expect(seen).toEqual(expected.map((e) => e.id));
    expect(path).toContain(`after=${formatCursor(25)}`);
  });

  it('answers 503 for a tenant the token reads but another replica runs', async () => {
    const { server } = await twoTenantFeeds(1);
    const elsewhere = await get(server, '/v1/tenants/initech/events', OPERATOR);
    expect(elsewhere.status).toBe(503);
    expect(elsewhere.headers['retry-after']).toBe('5');
    expect((await get(server, '/v1/tenants/nosuch/events', OPERATOR)).status).toBe(404);
  });
});

/** A journal whose reads wait for `release`, counting what is read at once. */
class GatedJournal implements JournalStore {
  inFlight = 0;
  peakInFlight = 0;
  largestReadBytes = 0;
  private waiting: (() => void)[] = [];
  private open = false;

  constructor(private readonly inner: JournalStore) {}

  head(): Promise<number> {
    return this.inner.head();
  }

  prunedThrough(): Promise<number> {
    return this.inner.prunedThrough();
  }

  async page(...args: Parameters<JournalStore['page']>): ReturnType<JournalStore['page']> {
    this.inFlight++;
    this.peakInFlight = Math.max(this.peakInFlight, this.inFlight);
    try {
      if (!this.open) await new Promise<void>((resolve) => this.waiting.push(resolve));
      const page = await this.inner.page(...args);
      const bytes = page.events.reduce((n, e) => n + Buffer.byteLength(e.payload), 0);
      this.largestReadBytes = Math.max(this.largestReadBytes, bytes);
      return page;
    } finally {
      this.inFlight--;
    }
  }

  get queued(): number {
    return this.waiting.length;
  }

  release(): void {
    this.open = true;
    for (const resolve of this.waiting.splice(0)) resolve();
  }
}

describe('feed pages under load', () => {
  it('holds 100 concurrent page requests of one token to feed.maxPagesPerToken reads of maxPageBytes each', async () => {
    const maxPageBytes = 256 * 1024;
    const gates: GatedJournal[] = [];
    const { server, stores, feeds } = await twoTenantFeeds(0, {
      config: { maxPagesPerToken: 4, maxPageBytes },
      journalOf: (journal) => {
        const gate = new GatedJournal(journal);
        gates.push(gate);
        return gate;
      },
    });
    // 40 events of 60 KB: 2.4 MB, ten times a page's bound.
    const harness = { store: stores.acme!, feed: feeds.acme! } as unknown as FeedHarness;
    await appendEvents(harness, 40, 'career', 'level_added', 'x'.repeat(60 * 1024));
    const gate = gates[0]!;
    let answered = 0;
    const answers = Array.from({ length: 100 }, () =>
      get(server, '/v1/tenants/acme/events?limit=1000', ACME).finally(() => answered++),
    );
    // The four admitted requests reach the store and wait there, while every other one is refused.
    await until(() => answered === 96 && gate.queued === 4, 30_000, '96 refusals and 4 reads waiting');
    gate.release();
    const settled = await Promise.all(answers);
    const ok = settled.filter((a) => a.status === 200);
    const tooMany = settled.filter((a) => a.status === 429);
    expect(ok.length).toBe(4);
    expect(tooMany.length).toBe(96);
    expect(tooMany[0]?.headers['retry-after']).toBe('1');
    expect(JSON.parse(tooMany[0]!.body)).toMatchObject({ type: '/v1/problems/too-many-pages' });
    expect(gate.peakInFlight).toBeLessThanOrEqual(4);
    // Each read from the store stopped at maxPageBytes, not at the 1,000 rows asked for.
    expect(gate.largestReadBytes).toBeLessThanOrEqual(maxPageBytes);
    for (const page of ok) {
      expect(Buffer.byteLength(page.body)).toBeLessThanOrEqual(maxPageBytes + 4 * 1024);
      expect((JSON.parse(page.body) as unknown[]).length).toBe(4);
    }
    // Once they are answered the token may ask again.
    expect((await get(server, '/v1/tenants/acme/events?limit=1000', ACME)).status).toBe(200);
  });
});
