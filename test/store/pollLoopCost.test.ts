import { describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../support/manualClock.js';
import { noopLogger } from '../support/noopLogger.js';
import { LogPoller } from '../../src/poll/logPoller.js';
import { PollLoop } from '../../src/poll/pollLoop.js';
import { ServerClock } from '../../src/poll/serverClock.js';
import { watchConfigSchema } from '../../src/poll/watchConfig.js';
import type { ChangefeedStore } from '../../src/store/changefeedStore.js';
import { SqliteStoreBackend } from '../../src/store/sqlite/sqliteStoreBackend.js';
import type { StoreActivity } from '../../src/store/storeActivity.js';
import { storeConfigSchema } from '../../src/store/storeConfig.js';
import type { WatchedLog } from '../../src/store/storeRecords.js';
import { makeTempDir } from '../support/tempDir.js';
import { clientFor, CLIENT_NOW, LoopbackService, RecordingGate } from '../unit/loopbackService.js';
import { BASE_URL, EVENTS, HOUR, watchOne } from './contract/storeFixtures.js';
import { admin, openBackend } from './postgresTestDb.js';

const MINUTE = 60_000;
const RUN_MS = 20 * MINUTE;

/**
 * A quiet tenant (a career log and a skill log with nothing new, on a loopback service) polled by
 * the real PollLoop and LogPoller for RUN_MS of a ManualClock. Returns each poll's log as the loop
 * handed it over beside the store's row at that moment, the loop's reads of its list of logs, and
 * what the run cost the store.
 */
async function quietLoop(store: ChangefeedStore, activity: StoreActivity, storeBusy: () => boolean = () => false) {
  const service = await LoopbackService.start(() => ({
    status: 200,
    body: { data: [], pagination: { limit: 200, offset: 0, total: 0 }, links: {} },
  }));
  await watchOne(store, 'career', 'c-1', CLIENT_NOW - HOUR);
  await store.watchedLogs.registerAll([
    {
      log: 'skill',
      objectId: 's-1',
      origin: 'config',
      coverageStart: CLIENT_NOW - HOUR,
      now: CLIENT_NOW - HOUR,
    },
  ]);
  const clock = new ManualClock(CLIENT_NOW);
  const watch = watchConfigSchema.parse({ sortOrder: { career: 'newest-first', skill: 'newest-first' } });
  const poller = new LogPoller({
    client: clientFor(service.url, new RecordingGate()),
    store,
    serverClock: new ServerClock(clock),
    clock,
    watch,
    events: EVENTS,
    baseUrl: BASE_URL,
    logger: noopLogger,
  });
  const handed: { given: WatchedLog; stored: WatchedLog | undefined }[] = [];
  let polling = 0;
  const loop = new PollLoop({
    poller: {
      poll: async (w, signal) => {
        polling++;
        try {
          handed.push({ given: w, stored: await store.watchedLogs.get(w.log, w.objectId) });
          return await poller.poll(w, signal);
        } finally {
          polling--;
        }
      },
    },
    registry: {
      discoveryEnabled: false,
      discoveredLists: '',
      lastDiscovery: () => Promise.resolve(undefined),
      discover: () => Promise.resolve({ added: 0 }),
    },
    store,
    clock,
    watch,
    logger: noopLogger,
  });
  const lists = vi.spyOn(store.watchedLogs, 'list');
  const before = activity.transactions;
  loop.start();
  await runFor(clock, RUN_MS, () => polling > 0 || storeBusy());
  await loop.stop();
  // The loop's own `get` beside each poll is the test's, not the loop's.
  const transactions = activity.transactions - before - handed.length;
  return { handed, listReads: lists.mock.calls.length, transactions };
}

/**
 * Moves `clock` on by `ms`, to one sleeper's wake-up at a time, each time once nothing has been
 * `busy` for a few turns of the event loop: a poll's request and a store's query run on real
 * sockets, and time must not jump under them.
 */
async function runFor(clock: ManualClock, ms: number, busy: () => boolean): Promise<void> {
  const end = clock.now() + ms;
  while (clock.now() < end) {
    for (let idleTurns = 0; idleTurns < 3;) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (!busy()) idleTurns++;
      else {
        idleTurns = 0;
        await new Promise<void>((resolve) => setTimeout(resolve, 1));
      }
    }
    const next = clock.nextWakeAt();
    await clock.advanceTo(next === undefined ? end : Math.min(next, end));
  }
}

/**
 * Each poll starts from the cursor the last one committed (the loop's copy is the store's row),
 * and the list of logs is read at start and every five minutes: it was read every half minute
 * (21 reads in these 20 minutes), each read a transaction of its own on PostgreSQL, a sixth of the
 * store's transactions at 1,000 tenants.
 */
function expectCursorKept(run: Awaited<ReturnType<typeof quietLoop>>): void {
  expect(run.handed.length).toBeGreaterThan(10);
  for (const { given, stored } of run.handed) expect(given).toEqual(stored);
  expect(run.listReads).toBeLessThanOrEqual(5);
}

describe("what a quiet tenant's poll loop asks the store", () => {
  it('on SQLite: one transaction per poll, its list of logs read at start and every five minutes', async () => {
    const backend = new SqliteStoreBackend({ stateDir: makeTempDir(), store: storeConfigSchema.parse({}) });
    try {
      const store = await backend.tenantStore('t');
      const run = await quietLoop(store, backend.activity);
      expectCursorKept(run);
      // The polls, the learned rates riding along, the first poll's reads; no read per half minute.
      expect(run.transactions).toBeLessThanOrEqual(run.handed.length + 10);
    } finally {
      await backend.close();
    }
  });

  it.skipIf(!admin)('on PostgreSQL: the same, each read outside a transaction counted as one', async () => {
    const backend = await openBackend();
    const store = await backend.tenantStore('t');
    const pool = backend.pool;
    const run = await quietLoop(store, backend.activity, () => pool.totalCount > pool.idleCount);
    expectCursorKept(run);
    expect(run.transactions).toBeLessThanOrEqual(run.handed.length + 10);
  });
});
