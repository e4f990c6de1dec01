import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ServiceClient } from '../../src/api/serviceClient.js';
import { systemClock } from '../../src/clock.js';
import { ServerClock } from '../../src/poll/serverClock.js';
import { watchConfigSchema } from '../../src/poll/watchConfig.js';
import { LAST_DISCOVERY_KEY, WatchRegistry } from '../../src/poll/watchRegistry.js';
import type { SqliteChangefeedStore } from '../../src/store/sqlite/sqliteStore.js';
import { openSqliteStoreFile } from '../support/sqliteStoreFile.js';
import { makeTempDir } from '../support/tempDir.js';
import { startTestSimulator } from '../support/testSimulator.js';

const opened: { store: SqliteChangefeedStore; client: ServiceClient }[] = [];
afterEach(async () => {
  for (const { store, client } of opened.splice(0)) {
    await client.close();
    await store.close();
  }
});

/** One discovery over a store whose recorded last discovery is `recorded`: the careers it watches then. */
async function discoverAfter(recorded: string) {
  const simulator = await startTestSimulator({ careers: 3, skills: 0 });
  const store = openSqliteStoreFile(join(makeTempDir(), 'store.db'));
  const client = new ServiceClient({
    baseUrl: simulator.url,
    apiKey: () => simulator.apiKey,
    credentialSource: 'test',
    userAgent: 'test',
    timeoutMs: 5_000,
    maxResponseBytes: 1 << 20,
    clock: systemClock,
    gate: { acquire: () => Promise.resolve(), observe: () => undefined },
    logger: pino({ level: 'silent' }),
  });
  opened.push({ store, client });
  await store.setMeta(LAST_DISCOVERY_KEY, recorded);
  const registry = new WatchRegistry({
    client,
    store,
    serverClock: new ServerClock(systemClock),
    clock: systemClock,
    watch: watchConfigSchema.parse({ careers: { discover: true } }),
    logger: pino({ level: 'silent' }),
  });
  await registry.discover();
  const finishedAt = systemClock.now();
  return { finishedAt, careers: (await store.watchedLogs.list()).filter((w) => w.log === 'career') };
}

describe('discovery after a corrupt record of the last one', () => {
  it('covers a career that appeared from no later than now when the record lies in the future', async () => {
    const { finishedAt, careers } = await discoverAfter(String(Date.parse('2100-01-01T00:00:00Z')));
    expect(careers).toHaveLength(3);
    for (const career of careers) expect(career.coverageStart).toBeLessThanOrEqual(finishedAt);
  });

  it('watches the careers with a readable coverage start when the record is not a number', async () => {
    const { careers } = await discoverAfter('{"garbage":');
    expect(careers).toHaveLength(3);
    for (const career of careers) expect(Number.isFinite(career.coverageStart)).toBe(true);
  });
});
