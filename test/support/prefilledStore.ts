import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildCloudEvent, eventsConfigSchema } from '../../src/events/cloudEvent.js';
import type { LogKind } from '../../src/logs.js';
import type { SqliteChangefeedStore } from '../../src/store/sqlite/sqliteStore.js';
import { openSqliteStoreFile } from './sqliteStoreFile.js';

/**
 * A store whose outbox holds `count` career events spread over `objects` careers, each ingested
 * as one poll would, for the given sinks. In a fresh temp dir unless `dir` is given; the events
 * belong to `tenant` (default `default`).
 */
export async function prefilledStore(
  count: number,
  sinks: { name: string; type: string }[],
  objects = 500,
  dir?: string,
  tenant?: string,
): Promise<{ store: SqliteChangefeedStore; dir: string }> {
  dir ??= mkdtempSync(join(tmpdir(), 'changefeed-bench-'));
  const file = join(dir, 'changefeed.sqlite');
  const store = openSqliteStoreFile(file, tenant === undefined ? {} : { tenant });
  await store.sinks.activate(sinks, Date.now());
  const events = eventsConfigSchema.parse({});
  const perObject = Math.ceil(count / objects);
  const start = Date.UTC(2026, 0, 1);
  for (let o = 0; o < objects && o * perObject < count; o++) {
    const objectId = `car_${o}`;
    const log: LogKind = 'career';
    const entries = Array.from({ length: Math.min(perObject, count - o * perObject) }, (_, i) => ({
      id: `act_${o}_${i}`,
      event: 'level_added',
      description: `Level ${i} added`,
      performedById: `per_${i % 50}`,
      performedAt: new Date(start + i * 1000).toISOString(),
      relatedLevelId: `lvl_${i}`,
    }));
    await store.ingest({
      log,
      objectId,
      entries,
      windowEnd: start + perObject * 1000,
      toEvent: (entry) =>
        buildCloudEvent({ tenant: store.tenant, log, objectId, entry, baseUrl: 'https://skills.example' }, events),
      now: Date.now(),
    });
  }
  return { store, dir };
}
