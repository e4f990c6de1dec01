import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { ServiceClient } from '../../src/api/serviceClient.js';
import { systemClock } from '../../src/clock.js';
import { ServerClock } from '../../src/poll/serverClock.js';
import { watchConfigSchema } from '../../src/poll/watchConfig.js';
import { WatchRegistry } from '../../src/poll/watchRegistry.js';
import { SqliteStoreBackend } from '../../src/store/sqlite/sqliteStoreBackend.js';
import { storeConfigSchema } from '../../src/store/storeConfig.js';
import { makeTempDir } from '../support/tempDir.js';

// A tenant's start registers its configured logs. A restart finds them watched already: the
// registration was still a write (a fenced transaction on PostgreSQL) for every tenant start.

const backends: SqliteStoreBackend[] = [];
afterEach(async () => {
  for (const backend of backends.splice(0)) await backend.close();
});

async function setup() {
  const backend = new SqliteStoreBackend({ stateDir: makeTempDir(), store: storeConfigSchema.parse({}) });
  backends.push(backend);
  const store = await backend.tenantStore('acme');
  const registry = new WatchRegistry({
    // Registration asks the service nothing.
    client: {} as ServiceClient,
    store,
    serverClock: new ServerClock(systemClock),
    clock: systemClock,
    watch: watchConfigSchema.parse({ careers: { ids: ['c-1', 'c-2'] }, startFrom: '2026-01-01T00:00:00Z' }),
    logger: pino({ level: 'silent' }),
  });
  const statements = () => backend.activity.statements;
  return { store, registry, statements };
}

describe('registering the configured logs at a tenant start', () => {
  it('writes nothing when every configured log is in the list the start read', async () => {
    const { store, registry, statements } = await setup();
    expect(await registry.registerConfigured(await store.watchedLogs.list())).toBe(3);
    const watched = await store.watchedLogs.list();
    expect(watched.map((w) => `${w.log}/${w.objectId}`).sort()).toEqual([
      'career/c-1',
      'career/c-2',
      'identity_provider/',
    ]);
    const before = statements();
    expect(await registry.registerConfigured(watched)).toBe(0);
    expect(statements()).toBe(before);
  });
});
