import { EventSource } from 'eventsource';
import { Registry } from 'prom-client';
import { systemClock } from '../../src/clock.js';
import { EventFeed } from '../../src/feed/eventFeed.js';
import { feedConfigSchema } from '../../src/feed/feedConfig.js';
import { startHealthServer } from '../../src/observe/healthServer.js';
import { prefilledStore } from '../../test/support/prefilledStore.js';
import { withPeakRss, type BenchRow } from '../benchTable.js';

const TOKEN = 'bench-feed-token-0123456789';

/**
 * The live stream: `streams` EventSource clients (the `eventsource` package, in this same
 * process) each read a journal of `count` events from the start; events/s counts every event
 * every client received, from connecting until the last one has all of them.
 */
export async function feedStreaming(count: number, streams: number): Promise<BenchRow> {
  const { store } = prefilledStore(count, [{ name: 'file', type: 'file' }]);
  const feed = new EventFeed(
    feedConfigSchema.parse({ enabled: true, tokens: [TOKEN], maxStreamsPerToken: streams }),
    store.journal,
    systemClock,
  );
  const server = await startHealthServer(
    { port: 0, host: '127.0.0.1', sinkGraceSeconds: 300 },
    { alive: () => true, readiness: () => [], metrics: new Registry(), routes: feed.handle.bind(feed) },
  );
  const sources: EventSource[] = [];
  try {
    const started = performance.now();
    const { peakRssMiB } = await withPeakRss(() =>
      Promise.all(
        Array.from(
          { length: streams },
          () =>
            new Promise<void>((resolve, reject) => {
              let received = 0;
              const source = new EventSource(`${server.url}/v1/events/stream`, {
                fetch: (input, init) =>
                  fetch(input, { ...init, headers: { ...(init?.headers ?? {}), Authorization: `Bearer ${TOKEN}` } }),
              });
              sources.push(source);
              source.onmessage = () => {
                if (++received === count) resolve();
              };
              source.onerror = (error) => reject(new Error(`stream failed: ${error.message ?? 'unknown'}`));
            }),
        ),
      ),
    );
    const seconds = (performance.now() - started) / 1000;
    return {
      case: `${streams} SSE stream${streams === 1 ? '' : 's'}, ${count.toLocaleString('en-US')} events each`,
      events: count * streams,
      'events/s': Math.round((count * streams) / seconds),
      'peak RSS MiB': Math.round(peakRssMiB),
    };
  } finally {
    for (const source of sources) source.close();
    feed.close();
    await server.close();
    store.close();
  }
}
