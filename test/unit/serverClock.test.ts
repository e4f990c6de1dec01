import { describe, expect, it } from 'vitest';
import type { ResponseMeta } from '../../src/api/responseHeaders.js';
import { ManualClock } from '../support/manualClock.js';
import {
  nextOffsetSamples,
  OFFSET_SAMPLES,
  offsetBounds,
  ServerClock,
  type RejectedClock,
} from '../../src/poll/serverClock.js';

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
    const rejected: RejectedClock[] = [];
    const serverClock = new ServerClock(clock, { toleranceMs: 5 * MIN, onRejected: (r) => rejected.push(r) });
    serverClock.observe(answer(clock, 0));
    expect(serverClock.problem()).toBeUndefined();
    serverClock.observe(answer(clock, 30 * DAY));
    expect(serverClock.problem()).toMatch(/2592000 s ahead of the clock believed so far/);
    expect(serverClock.now()).toBe(clock.now());
    serverClock.observe(answer(clock, 0));
    expect(serverClock.problem()).toBeUndefined();
    expect(rejected).toHaveLength(1);
  });
});

describe('the offset from whole-second Date headers', () => {
  it('bounds the offset by when the request left and when the headers came back', () => {
    const meta = { ...answer(new ManualClock(T0 + 40), -40), sentAt: T0 + 30 };
    // Date says T0 (read between T0 + 30 and T0 + 40 ours, at [T0, T0 + 1 s) the service's).
    expect(offsetBounds(meta)).toEqual({ low: -40, high: 970 });
    expect(offsetBounds({ ...meta, sentAt: undefined })).toEqual({ low: -40, high: 960 });
    expect(offsetBounds({ ...meta, serverDate: undefined })).toBeUndefined();
  });

  it.each([
    ['a first answer is believed alone', [], { low: -400, high: 600 }, [-400]],
    ['a later, tighter answer raises the estimate', [-400], { low: -150, high: 850 }, [-400, -150]],
    ['a looser answer is kept but does not lower it', [-400, -150], { low: -900, high: 100 }, [-400, -150, -900]],
    ['an answer that rules out the estimate starts afresh', [-400, -150], { low: -1_300, high: -300 }, [-1_300]],
    [
      'only the most recent answers are kept',
      Array.from({ length: OFFSET_SAMPLES }, (_, i) => -i),
      { low: -999, high: 1 },
      [...Array.from({ length: OFFSET_SAMPLES - 1 }, (_, i) => -(i + 1)), -999],
    ],
  ])('%s', (_name, samples, bounds, expected) => {
    expect(nextOffsetSamples(samples, bounds)).toEqual(expected);
  });

  it("narrows to the network's time, never ahead of the service", async () => {
    // The service is 250 ms ahead; answers take 10 ms each way and come every 4.321 s, so the
    // Date header's second boundary falls at many phases of the request.
    const trueOffset = 250;
    const clock = new ManualClock(T0);
    const serverClock = new ServerClock(clock, { toleranceMs: 5 * MIN });
    const skews: number[] = [];
    for (let i = 0; i < 40; i++) {
      const sentAt = clock.now();
      const serviceRead = sentAt + 10 + trueOffset;
      const receivedAt = sentAt + 20;
      serverClock.observe({
        ...answer(clock, 0),
        serverDate: serviceRead - (serviceRead % 1000),
        receivedAt,
        sentAt,
      });
      skews.push(serverClock.skewMs);
      await clock.advance(4_321);
    }
    expect(Math.max(...skews)).toBeLessThanOrEqual(trueOffset);
    // One answer alone is up to a second (and the network's time) behind; forty are within 20 ms.
    expect(skews.at(-1)).toBeGreaterThanOrEqual(trueOffset - 20);
  });
});
