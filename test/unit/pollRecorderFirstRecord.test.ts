import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parsePollHours, POLL_HOURS_META_KEY } from '../../src/poll/pollHours.js';
import type { PollFailures } from '../../src/poll/pollFailures.js';
import type { PollResult } from '../../src/poll/logPoller.js';
import { PollRecorder } from '../../src/poll/pollRecorder.js';
import type { PollScheduler } from '../../src/schedule/pollScheduler.js';
import type { SqliteChangefeedStore } from '../../src/store/sqlite/sqliteStore.js';
import type { WatchedLog } from '../../src/store/storeRecords.js';
import { ManualClock } from '../support/manualClock.js';
import { noopLogger } from '../support/noopLogger.js';
import { openSqliteStoreFile } from '../support/sqliteStoreFile.js';
import { makeTempDir } from '../support/tempDir.js';

// A poll that read nothing writes nothing more: the recorder's deferred state waits for the
// tenant's next write, or DEFERRED_STATE_FLUSH_MS. The console drew no hour and `status` showed
// no budget for up to that long after a start.
const nothingRead: PollResult = { emitted: 0, duplicates: 0, requests: 1, emittedPerformedAt: [] };
const watched = { log: 'career', objectId: 'c1', windowEnd: null } as unknown as WatchedLog;

let store: SqliteChangefeedStore | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
});

describe("a holder's first poll record", () => {
  it('reaches the store with the first poll, and the next ones wait for a write as before', async () => {
    store = openSqliteStoreFile(join(makeTempDir(), 'changefeed.sqlite'));
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 8));
    const recorder = new PollRecorder({
      poller: { poll: () => Promise.resolve(nothingRead) },
      failures: { succeeded: () => undefined } as unknown as PollFailures,
      scheduler: { recordPoll: () => undefined, pollBudgetPerHour: () => 100 } as unknown as PollScheduler,
      store,
      clock,
      logger: noopLogger,
      budget: { snapshot: () => ({ allowancePerHour: 1_000, sent: 3 }) as never },
    });
    const signal = new AbortController().signal;
    await recorder.pollAndRecord(watched, signal);
    expect(parsePollHours(await store.getMeta(POLL_HOURS_META_KEY))).toMatchObject([{ polls: 1, requests: 3 }]);

    // Half a minute on, the record is due again: deferred to the next write, as every later one.
    await clock.advance(30_000);
    await recorder.pollAndRecord(watched, signal);
    expect(parsePollHours(await store.getMeta(POLL_HOURS_META_KEY))).toMatchObject([{ polls: 1 }]);
    await store.flushDeferred();
    expect(parsePollHours(await store.getMeta(POLL_HOURS_META_KEY))).toMatchObject([{ polls: 2 }]);
  });
});
