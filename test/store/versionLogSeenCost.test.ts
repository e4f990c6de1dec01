import { describe, expect, it } from 'vitest';
import type { ActivityEntry } from '../../src/api/activityEntry.js';
import { ManualClock } from '../support/manualClock.js';
import { noopLogger } from '../support/noopLogger.js';
import { LogPoller } from '../../src/poll/logPoller.js';
import { ServerClock } from '../../src/poll/serverClock.js';
import { watchConfigSchema } from '../../src/poll/watchConfig.js';
import type { StoreActivity } from '../../src/store/storeActivity.js';
import type { WatchedLog } from '../../src/store/storeRecords.js';
import { clientFor, CLIENT_NOW, LoopbackService, RecordingGate } from '../unit/loopbackService.js';
import { admin, openBackend } from './postgresTestDb.js';
import { BASE_URL, entry, EVENTS, watchOne } from './contract/storeFixtures.js';

/**
 * A skill's version log on a loopback service, polled by the real LogPoller into a PostgreSQL
 * store, counting what each poll asks the store (each read outside a transaction is one).
 */
async function skillLog(page: ActivityEntry[]) {
  const service = await LoopbackService.start(() => ({
    status: 200,
    body: { data: page, pagination: { limit: 200, offset: 0, total: page.length }, links: {} },
  }));
  const backend = await openBackend();
  const store = await backend.tenantStore('t');
  await watchOne(store, 'skill', 's-1', CLIENT_NOW);
  const clock = new ManualClock(CLIENT_NOW);
  const poller = new LogPoller({
    client: clientFor(service.url, new RecordingGate()),
    store,
    serverClock: new ServerClock(clock),
    clock,
    watch: watchConfigSchema.parse({ sortOrder: { skill: 'newest-first' } }),
    events: EVENTS,
    baseUrl: BASE_URL,
    logger: noopLogger,
  });
  const watched = async (): Promise<WatchedLog> => (await store.watchedLogs.get('skill', 's-1'))!;
  const poll = async () => {
    const log = await watched();
    return cost(backend.activity, () => poller.poll(log));
  };
  return { poll };
}

async function cost(activity: StoreActivity, work: () => Promise<{ emitted: number }>) {
  const before = { transactions: activity.transactions, statements: activity.statements };
  const { emitted } = await work();
  return {
    emitted,
    transactions: activity.transactions - before.transactions,
    statements: activity.statements - before.statements,
  };
}

describe.skipIf(!admin)("what a poll of a skill's version log asks the PostgreSQL store", () => {
  it('reads nothing before the ingest when the page is the one the last poll committed, and still finds news', async () => {
    const page = [entry('v-2'), entry('v-1')];
    const { poll } = await skillLog(page);
    // The baseline asks which ids were seen (one read), then ingests them silently.
    expect(await poll()).toMatchObject({ emitted: 0, transactions: 2 });
    // The same page again: the ingest's cursor, one statement, and nothing before it.
    expect(await poll()).toMatchObject({ emitted: 0, transactions: 1, statements: 1 });
    expect(await poll()).toMatchObject({ emitted: 0, transactions: 1, statements: 1 });
    // A new entry changes the page: the store is asked again, and the entry is emitted once.
    page.unshift(entry('v-3', CLIENT_NOW - 1_000));
    expect(await poll()).toMatchObject({ emitted: 1, transactions: 2 });
    expect(await poll()).toMatchObject({ emitted: 0, transactions: 1 });
  });
});
