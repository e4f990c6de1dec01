import { EventSource } from 'eventsource';
import { systemClock } from '../../src/clock.js';
import { routeTenantFeeds } from '../../src/daemon/tenantFeeds.js';
import { EventFeed } from '../../src/feed/eventFeed.js';
import { feedConfigSchema } from '../../src/feed/feedConfig.js';
import { listenBounded } from '../../src/boundedListener.js';
import { FeedSlots, FeedTokens } from '../../src/feed/feedTokens.js';
import { buildCloudEvent, eventsConfigSchema } from '../../src/events/cloudEvent.js';
import type { ChangefeedStore } from '../../src/store/changefeedStore.js';
import { prefilledStore } from '../../test/support/prefilledStore.js';
import { withPeakRss, type BenchRow } from '../benchTable.js';

const TOKEN = 'bench-feed-token-0123456789';

/**
 * The live stream: `streams` EventSource clients (the `eventsource` package, in this same
 * process) each read a journal of `count` events from the start; events/s counts every event
 * every client received, from connecting until the last one has all of them. With `live`, the
 * clients connect to an empty journal first, which then grows by polls of 500 events.
 */
export async function feedStreaming(count: number, streams: number, live = false): Promise<BenchRow> {
  const { store } = await prefilledStore(live ? 0 : count, [{ name: 'file', type: 'file' }]);
  const config = feedConfigSchema.parse({ enabled: true, port: 0, maxStreamsPerToken: streams });
  const feed = new EventFeed(config, store.journal, systemClock);
  const tokens = new FeedTokens([{ token: TOKEN, reads: { kind: 'all' } }]);
  const routes = { tokens: () => tokens, slots: new FeedSlots(config), feedOf: () => feed, knows: () => true };
  const server = await listenBounded(config, (req, res) => routeTenantFeeds(req, res, routes));
  const sources: EventSource[] = [];
  let opened = 0;
  let allOpen: () => void = () => undefined;
  const connected = new Promise<void>((resolve) => (allOpen = resolve));
  try {
    let started = performance.now();
    const { peakRssMiB } = await withPeakRss(() => {
      const received = Promise.all(
        Array.from(
          { length: streams },
          () =>
            new Promise<void>((resolve, reject) => {
              let got = 0;
              const source = new EventSource(`${server.url}/v1/events/stream`, {
                fetch: (input, init) =>
                  fetch(input, { ...init, headers: { ...(init?.headers ?? {}), Authorization: `Bearer ${TOKEN}` } }),
              });
              sources.push(source);
              source.onopen = () => {
                if (++opened === streams) allOpen();
              };
              source.onmessage = () => {
                if (++got === count) resolve();
              };
              source.onerror = (error) => reject(new Error(`stream failed: ${error.message ?? 'unknown'}`));
            }),
        ),
      );
      if (!live) return received;
      // Live: once every stream is open, the journal grows by polls of 500 events, each notifying the feed.
      return connected.then(async () => {
        started = performance.now();
        for (let appended = 0; appended < count; appended += 500) {
          await appendPoll(store, appended, Math.min(500, count - appended));
          feed.notify();
          await new Promise((resolve) => setImmediate(resolve));
        }
        return received;
      });
    });
    const seconds = (performance.now() - started) / 1000;
    return {
      case: `${streams} SSE stream${streams === 1 ? '' : 's'}, ${count.toLocaleString('en-US')} events each${live ? ', appended live' : ''}`,
      events: count * streams,
      'events/s': Math.round((count * streams) / seconds),
      'peak RSS MiB': Math.round(peakRssMiB),
    };
  } finally {
    for (const source of sources) source.close();
    feed.close();
    await server.close();
    await store.close();
  }
}

const eventsConfig = eventsConfigSchema.parse({});

/** `n` career events ingested as one poll would. */
async function appendPoll(store: ChangefeedStore, offset: number, n: number): Promise<void> {
  const objectId = `car_${offset % 50}`;
  const start = Date.UTC(2026, 0, 1);
  await store.ingest({
    log: 'career',
    objectId,
    entries: Array.from({ length: n }, (_, i) => ({
      id: `act_live_${offset + i}`,
      event: 'level_added',
      description: `Level ${i} added`,
      performedById: `per_${i % 50}`,
      performedAt: new Date(start + (offset + i) * 1000).toISOString(),
    })),
    windowEnd: start + (offset + n) * 1000,
    toEvent: (entry) =>
      buildCloudEvent(
        { tenant: 'default', log: 'career', objectId, entry, baseUrl: 'https://skills.example' },
        eventsConfig,
      ),
    now: Date.now(),
  });
}
