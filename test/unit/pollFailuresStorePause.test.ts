import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/observe/createLogger.js';
import { PollFailures } from '../../src/poll/pollFailures.js';
import type { ChangefeedStore } from '../../src/store/changefeedStore.js';
import { StoreHealth, StoreUnavailableError } from '../../src/store/storeHealth.js';
import type { WatchedLog } from '../../src/store/storeRecords.js';

const watched = { log: 'career', objectId: 'c1', consecutiveFailures: 0 } as unknown as WatchedLog;

describe('PollFailures while the store refuses', () => {
  it('logs the pause for a store that cannot be written once at warn, however many polls it pauses, and again after a success', async () => {
    const lines: { level: number; msg: string }[] = [];
    const logger = createLogger({
      level: 'info',
      destination: new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(JSON.parse(chunk.toString()) as { level: number; msg: string });
          done();
        },
      }),
    });
    const refused = new StoreUnavailableError('the disk holding /state/changefeed.sqlite is full');
    // recordFailure is refused too, as on a full disk.
    const store = {
      health: new StoreHealth(),
      location: '/state/changefeed.sqlite',
      watchedLogs: { recordFailure: () => Promise.reject(refused) },
    } as unknown as ChangefeedStore;
    const failures = new PollFailures({ store, logger });
    // A disk full for a minute: a poll tried after each 5 s pause, each refused.
    for (let i = 0; i < 12; i++) await failures.failed(watched, refused, i * 5_000);
    expect(lines.map((l) => [l.level, l.msg])).toEqual([[40, refused.message]]);
    failures.succeeded(watched);
    await failures.failed(watched, refused, 70_000);
    expect(lines).toHaveLength(2);
  });
});
