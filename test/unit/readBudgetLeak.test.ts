import { getEventListeners, setMaxListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../support/manualClock.js';
import { ReadBudget } from '../../src/poll/readBudget.js';
import { withVirtualTime } from '../support/virtualTime.js';

describe('read budget and long-lived abort signals', () => {
  it('leaves no abort listener behind on the caller signal once requests are granted', async () => {
    const clock = new ManualClock();
    const budget = new ReadBudget(
      { readsPerHour: 3_600, reserve: 0, retryAfterFallbackSeconds: 60, maxServerPauseSeconds: 3600 },
      clock,
    );
    const controller = new AbortController();
    // Fifty waiters on one signal at once is this test's point, not a leak to warn about.
    setMaxListeners(60, controller.signal);
    const grants = Array.from({ length: 50 }, () => budget.acquire('poll', controller.signal));
    await withVirtualTime(clock, Promise.all(grants));
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});
