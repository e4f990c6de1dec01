import type { SqliteChangefeedStore } from '../../src/store/sqlite/sqliteStore.js';
import { EventSource } from 'eventsource';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { systemClock, type Clock } from '../../src/clock.js';
import { routeTenantFeeds } from '../../src/daemon/tenantFeeds.js';
import { buildCloudEvent, eventsConfigSchema } from '../../src/events/cloudEvent.js';
import { EventFeed } from '../../src/feed/eventFeed.js';
import { feedConfigSchema, type FeedConfig } from '../../src/feed/feedConfig.js';
import { listenBounded, type BoundedListener } from '../../src/boundedListener.js';
import { FeedSlots, FeedTokens, type FeedTokenGrant } from '../../src/feed/feedTokens.js';
import type { LogKind } from '../../src/logs.js';
import { prefilledStore } from '../support/prefilledStore.js';
import { makeTempDir } from '../support/tempDir.js';

export const TOKEN = 'feed-token-0123456789abcdef';
export const OTHER_TOKEN = 'feed-token-fedcba9876543210';

export interface FeedHarness {
  store: SqliteChangefeedStore;
  feed: EventFeed;
  server: BoundedListener;
  close(): Promise<void>;
}

export interface FeedsOptions {
  config?: Partial<FeedConfig>;
  /** Who reads what; TOKEN and OTHER_TOKEN read the tenant `default` unless given. */
  grants?: FeedTokenGrant[];
  /** Tenants known to this process without running here. */
  elsewhere?: string[];
  /** Sees every request first (to wrap the response), then passes it on. */
  around?: (req: IncomingMessage, res: ServerResponse, next: () => void) => void;
}

/** The feed listener of a process running `feeds` (tenant name to feed), as the daemon serves it. */
export function serveFeeds(
  feeds: Readonly<Record<string, EventFeed>>,
  options: FeedsOptions = {},
): Promise<BoundedListener> {
  const config = feedConfigSchema.parse({ enabled: true, port: 0, ...options.config });
  const grants = options.grants ?? [
    { token: TOKEN, reads: { kind: 'tenant', tenant: 'default' } },
    { token: OTHER_TOKEN, reads: { kind: 'tenant', tenant: 'default' } },
  ];
  const tokens = new FeedTokens(grants);
  const slots = new FeedSlots(config);
  const known = new Set([...Object.keys(feeds), ...(options.elsewhere ?? [])]);
  const routes = {
    tokens: () => tokens,
    slots,
    feedOf: (tenant: string) => feeds[tenant],
    knows: (tenant: string) => known.has(tenant),
  };
  return listenBounded(config, (req, res) => {
    const next = () => routeTenantFeeds(req, res, routes);
    if (options.around) options.around(req, res, next);
    else next();
  });
}

/** A store pre-filled with `count` career events, served by the feed on a loopback port. */
export async function startFeed(
  count: number,
  options: { clock?: Clock; config?: Partial<FeedConfig>; objects?: number } = {},
): Promise<FeedHarness> {
  const { store } = await prefilledStore(count, [{ name: 'file', type: 'file' }], options.objects ?? 10, makeTempDir());
  const config = feedConfigSchema.parse({ enabled: true, port: 0, ...options.config });
  const feed = new EventFeed(config, store.journal, options.clock ?? systemClock);
  const server = await serveFeeds({ default: feed }, { config: options.config ?? {} });
  return {
    store,
    feed,
    server,
    close: async () => {
      feed.close();
      await server.close();
      await store.close();
    },
  };
}

let appended = 0;
const eventsConfig = eventsConfigSchema.parse({});

/** Appends `n` events to the journal as one poll would, and tells the feed. */
export async function appendEvents(
  harness: FeedHarness,
  n: number,
  log: LogKind = 'career',
  name = 'level_added',
  description = 'live',
): Promise<void> {
  const objectId = log === 'identity_provider' ? '' : 'car_live';
  const entries = Array.from({ length: n }, () => ({
    id: `act_live_${process.pid}_${appended++}`,
    event: name,
    description,
    performedAt: new Date(Date.UTC(2026, 1, 1) + appended * 1000).toISOString(),
  }));
  await harness.store.ingest({
    log,
    objectId,
    entries,
    windowEnd: Date.UTC(2026, 1, 2),
    toEvent: (entry) =>
      buildCloudEvent({ tenant: 'default', log, objectId, entry, baseUrl: 'https://skills.example' }, eventsConfig),
    now: Date.now(),
  });
  harness.feed.notify();
}

/** An EventSource (the `eventsource` package) that sends the bearer token. */
export function openEventSource(url: string, token = TOKEN): EventSource {
  return new EventSource(url, {
    fetch: (input, init) =>
      fetch(input, { ...init, headers: { ...(init?.headers ?? {}), Authorization: `Bearer ${token}` } }),
  });
}
