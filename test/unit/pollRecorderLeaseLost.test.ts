import { describe, expect, it } from 'vitest';
import { ManualClock } from '../support/manualClock.js';
import { LeaseLostError } from '../../src/cluster/writeFence.js';
import { noopLogger } from '../support/noopLogger.js';
import type { PollFailures } from '../../src/poll/pollFailures.js';
import { PollRecorder } from '../../src/poll/pollRecorder.js';
import type { PollScheduler } from '../../src/schedule/pollScheduler.js';
import type { ChangefeedStore } from '../../src/store/changefeedStore.js';
import type { WatchedLog } from '../../src/store/storeRecords.js';

// Only what pollAndRecord touches on a failed poll: the poller, the failure record, the clock.
function recorder(recordFailure: () => Promise<unknown>): PollRecorder {
  return new PollRecorder({
    poller: { poll: () => Promise.reject(new Error('socket hang up')) },
    failures: { failed: recordFailure } as unknown as PollFailures,
    scheduler: {} as PollScheduler,
    store: {} as ChangefeedStore,
    clock: new ManualClock(0),
    logger: noopLogger,
  });
}

const watched = { log: 'career', objectId: 'c1' } as unknown as WatchedLog;

describe('PollRecorder on a tenant whose lease is gone', () => {
  it('a failure it may no longer record (LEASE_LOST) ends the poll quietly rather than rejecting', async () => {
    const outcome = await recorder(() => Promise.reject(new LeaseLostError('acme', 'released'))).pollAndRecord(
      watched,
      new AbortController().signal,
    );
    expect(outcome).toMatchObject({ polled: false });
    expect(outcome).not.toHaveProperty('action');
  });

  it('any other error recording the failure is still thrown', async () => {
    await expect(
      recorder(() => Promise.reject(new Error('disk full'))).pollAndRecord(watched, new AbortController().signal),
    ).rejects.toThrow('disk full');
  });
});
