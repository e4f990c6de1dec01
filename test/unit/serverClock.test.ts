import { describe, expect, it } from 'vitest';
import type { ResponseMeta } from '../../src/api/responseHeaders.js';
import { ManualClock } from '../../src/clock.js';
import { ServerClock, type RejectedClock } from '../../src/poll/serverClock.js';

const T0 = Date.UTC(2026, 10, 22, 12, 0, 0);
const MIN = 60_000;
const DAY = 86_400_000;

function answer(clock: ManualClock, offsetMs: number): ResponseMeta {
  const receivedAt = clock.now();
  return {
    status: 200,
    requestId: undefined,
    limit: undefined,
    remaining: undefined,
    resetSeconds: undefined,
    retryAfterSeconds: undefined,
    serverDate: receivedAt + offsetMs,
    receivedAt,
  };
}

/** Feeds answers with these offsets (ms from the local clock), a second apart; returns the believed skew after each. */
function judge(offsets: number[], toleranceMs = 5 * MIN) {
  const clock = new ManualClock(T0);
  const rejected: RejectedClock[] = [];
  const serverClock = new ServerClock(clock, { toleranceMs, onRejected: (r) => rejected.push(r) });
  const skews = offsets.map((offset) => {
    serverClock.observe(answer(clock, offset));
    void clock.advance(1_000);
    return serverClock.skewMs;
  });
  return { skews, rejected, serverClock };
}

describe('ServerClock judging Date headers', () => {
  it.each([
    ['a small skew is believed at once', [2_000, 2_000], [2_000, 2_000], 0],
    ['one answer 30 days ahead is not believed, and the next normal one is', [0, 30 * DAY, 1_000], [0, 0, 1_000], 1],
    ['a first answer 30 days ahead is judged against the local clock', [30 * DAY, 0], [0, 0], 1],
    ['30 days behind is as suspect as ahead', [0, -30 * DAY, 0], [0, 0, 0], 1],
    [
      'a clock that really moved is followed once three answers agree',
      [0, 10 * MIN, 10 * MIN + 1_000, 10 * MIN],
      [0, 0, 0, 10 * MIN],
      2,
    ],
    [
      'answers that disagree with each other are never believed',
      [0, 10 * MIN, 20 * MIN, 30 * MIN, 40 * MIN],
      [0, 0, 0, 0, 0],
      4,
    ],
    [
      'drift within the tolerance is followed step by step',
      [0, 4 * MIN, 8 * MIN, 12 * MIN],
      [0, 4 * MIN, 8 * MIN, 12 * MIN],
      0,
    ],
  ])('%s', (_name, offsets, skews, rejections) => {
    const result = judge(offsets);
    expect(result.skews).toEqual(skews);
    expect(result.rejected).toHaveLength(rejections);
  });

  it('reports a clock problem while the latest Date is not believed, and clears it with a believable one', () => {
    const clock = new ManualClock(T0);
    const serverClock = new ServerClock(clock, { toleranceMs: 5 * MIN });
    serverClock.observe(answer(clock, 0));
    expect(serverClock.problem()).toBeUndefined();
    serverClock.observe(answer(clock, 30 * DAY));
    expect(serverClock.problem()).toMatch(/2592000 s ahead of the clock believed so far/);
    expect(serverClock.now()).toBe(clock.now());
    serverClock.observe(answer(clock, 0));
    expect(serverClock.problem()).toBeUndefined();
    expect(serverClock.rejected).toBe(1);
  });
});
