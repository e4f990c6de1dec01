import { describe, expect, it, vi } from 'vitest';
import type { ResponseMeta } from '../../src/api/responseHeaders.js';
import type { RequestPriority } from '../../src/api/serviceClient.js';
import { ManualClock } from '../support/manualClock.js';
import { AbortedError } from '../../src/errors.js';
import { ReadBudget, type BudgetConfig } from '../../src/poll/readBudget.js';
import { withVirtualTime } from '../support/virtualTime.js';

const T0 = Date.UTC(2026, 0, 1, 8, 0, 0);
const HOUR = 3_600_000;

/**
 * Grant offsets against what the pace gives: an interval of an hour / (allowance - 1) is not a
 * whole number of ms, and offsets from T0 (about 1.8e12) keep it to a 4,096th of a ms.
 */
function expectOffsets(actual: number[], expected: number[]): void {
  expect(actual).toHaveLength(expected.length);
  expected.forEach((at, i) => expect(actual[i]).toBeCloseTo(at, 2));
}

/** The most of `times` (ms) in any rolling hour. */
function busiestHour(times: readonly number[]): number {
  let most = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while (times[i]! - times[j]! >= HOUR) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

function setup(config: Partial<BudgetConfig> = {}) {
  const clock = new ManualClock(T0);
  const budget = new ReadBudget(
    { readsPerHour: 1000, reserve: 0.1, retryAfterFallbackSeconds: 60, maxServerPauseSeconds: 3600, ...config },
    clock,
  );
  /** Milliseconds after T0 at which each of `n` requests (queued now) was let through. */
  const grantOffsets = async (n: number, priority: RequestPriority = 'poll'): Promise<number[]> => {
    const offsets: number[] = [];
    const grants = Array.from({ length: n }, () => budget.acquire(priority).then(() => offsets.push(clock.now() - T0)));
    await withVirtualTime(clock, Promise.all(grants));
    return offsets;
  };
  /** Milliseconds after T0 at which requests asking at `arrivals` (ms after now) were let through. */
  const grantsAtArrivals = async (arrivals: readonly number[]): Promise<number[]> => {
    const offsets: number[] = [];
    const requests = arrivals.map(async (at) => {
      await clock.sleep(at);
      await budget.acquire('poll');
      offsets.push(clock.now() - T0);
    });
    await withVirtualTime(clock, Promise.all(requests));
    return offsets;
  };
  const observe = (meta: Partial<ResponseMeta>): void =>
    budget.observe({
      status: 200,
      requestId: undefined,
      limit: undefined,
      remaining: undefined,
      resetSeconds: undefined,
      retryAfterSeconds: undefined,
      serverDate: undefined,
      receivedAt: clock.now(),
      ...meta,
    });
  return { clock, budget, grantOffsets, grantsAtArrivals, observe };
}

describe('ReadBudget pacing', () => {
  it('spaces requests an hour / (cap * (1 - reserve) - 1) apart, one read an hour under the allowance, the first at once', async () => {
    const { grantOffsets, budget } = setup({ readsPerHour: 1000, reserve: 0.1 });
    const slot = HOUR / 899;
    expectOffsets(await grantOffsets(4), [0, slot, 2 * slot, 3 * slot]);
    expect(budget.snapshot()).toMatchObject({ allowancePerHour: 900, intervalMs: HOUR / 899, sent: 4 });
  });

  it('uses the whole cap when no reserve is kept', async () => {
    const { grantOffsets } = setup({ readsPerHour: 3600, reserve: 0 });
    expectOffsets(await grantOffsets(3), [0, HOUR / 3599, (2 * HOUR) / 3599]);
  });

  it('follows a server RateLimit-Limit lower than the cap', async () => {
    const { grantOffsets, observe } = setup({ readsPerHour: 1000, reserve: 0.1 });
    observe({ limit: 100 });
    // An allowance of 90: 89 an hour.
    expectOffsets(await grantOffsets(3), [0, HOUR / 89, (2 * HOUR) / 89]);
  });

  it('keeps to the cap when the server allows more', async () => {
    const { grantOffsets, observe } = setup({ readsPerHour: 1000, reserve: 0.1 });
    observe({ limit: 5000 });
    expectOffsets(await grantOffsets(2), [0, HOUR / 899]);
  });

  it('spreads what the server says is left evenly until RateLimit-Reset', async () => {
    const { grantOffsets, observe } = setup({ readsPerHour: 3600, reserve: 0 });
    observe({ limit: 3600, remaining: 4, resetSeconds: 40 });
    const offsets = await grantOffsets(4);
    // One goes now; the other three share the 40 s left, the last exactly at the reset.
    [0, 40_000 / 3, 80_000 / 3, 40_000].forEach((expected, i) => expect(offsets[i]).toBeCloseTo(expected, 3));
  });

  it('returns to the steady pace once the server window has reset', async () => {
    const { grantOffsets, observe } = setup({ readsPerHour: 3600, reserve: 0 });
    observe({ limit: 3600, remaining: 2, resetSeconds: 10 });
    const offsets = await grantOffsets(4);
    expect(offsets[1]).toBeCloseTo(10_000, 3);
    expect(offsets[2]! - offsets[1]!).toBeCloseTo(HOUR / 3599, 2);
    expect(offsets[3]! - offsets[2]!).toBeCloseTo(HOUR / 3599, 2);
  });

  it('spends reads the window holds beyond what the pace can spend before its reset at once, then paces', async () => {
    // A key taken over from a replica that died: 927 left for 3,300 s, of which the reserve is
    // 100, and the allowance's own pace (900 an hour, 4 s a read) spends 825 before the reset: two
    // reads were left unused. Then the steady pace, an hour / 899.
    const { grantOffsets, observe } = setup({ readsPerHour: 1000, reserve: 0.1 });
    observe({ limit: 1000, remaining: 927, resetSeconds: 3300 });
    expectOffsets(await grantOffsets(4), [0, 0, HOUR / 899, (2 * HOUR) / 899]);
  });

  it('spends no more than its allowance in a window whose RateLimit-Remaining is far above the limit', async () => {
    const { grantOffsets, observe } = setup({ readsPerHour: 1000, reserve: 0.1 });
    observe({ limit: 1000, remaining: 1_000_000, resetSeconds: 60 });
    const offsets = await grantOffsets(1000);
    // 900 a window at most, whatever the header claims: the rest wait for the window's end.
    expect(offsets.filter((offset) => offset < 60_000).length).toBeLessThanOrEqual(900);
  });

  it('spends unused reads once an hour when a cached answer repeats the same RateLimit headers', async () => {
    // A proxy's cached answer: Remaining never falls and Reset is always 30 minutes away.
    const { clock, budget, observe } = setup({ readsPerHour: 1000, reserve: 0.1 });
    const cached = { limit: 1000, remaining: 900, resetSeconds: 1800 };
    observe(cached);
    const sentAt: number[] = [];
    const requests = async (): Promise<void> => {
      while (clock.now() - T0 < 2 * 3_600_000 && sentAt.length < 5_000) {
        await budget.acquire('poll');
        sentAt.push(clock.now() - T0);
        observe(cached);
      }
    };
    await withVirtualTime(clock, Promise.all(Array.from({ length: 4 }, requests)));
    // Each hour: its 900 paced reads and, once, the 350 the first answer showed unused at most.
    for (const hour of [0, 1]) {
      const inHour = sentAt.filter((at) => at >= hour * 3_600_000 && at < (hour + 1) * 3_600_000);
      expect(inHour.length).toBeLessThanOrEqual(900 + 350 + 1);
    }
  });

  it('keeps the pace in a window used at the pace, such as a new one', async () => {
    const { grantOffsets, observe } = setup({ readsPerHour: 1000, reserve: 0.1 });
    observe({ limit: 1000, remaining: 999, resetSeconds: 3600 });
    const offsets = await grantOffsets(3);
    // 899 usable reads over 3,600 s; the first leaves at once and the 898 left share the hour: a
    // little slower than the steady pace (an hour / 899), never faster.
    expectOffsets(offsets, [0, HOUR / 898, (2 * HOUR) / 898]);
  });

  it('waits for the reset when nothing usable is left', async () => {
    const { grantOffsets, observe } = setup({ readsPerHour: 3600, reserve: 0 });
    observe({ limit: 3600, remaining: 0, resetSeconds: 30 });
    expect((await grantOffsets(1))[0]).toBe(30_000);
  });

  it('leaves the reserve to other clients of the key: waits for the reset when only the reserve is left', async () => {
    const { grantOffsets, observe } = setup({ readsPerHour: 1000, reserve: 0.1 });
    observe({ limit: 1000, remaining: 100, resetSeconds: 600 });
    expect((await grantOffsets(1))[0]).toBe(600_000);
  });
});

describe('ReadBudget pace grid', () => {
  // An allowance of 900: a slot every hour / 899 (4,004.45 ms). Each request asks at its arrival
  // (ms after T0).
  const slot = HOUR / 899;
  it.each([
    ['requests waiting in time leave one slot apart', [0, 0, 0], [0, slot, 2 * slot]],
    ['a request late by less than a slot leaves the next one on its slot', [0, 5_000, 5_000], [0, 5_000, 2 * slot]],
    ['a key idle for more than a slot earns nothing for it', [0, 9_000, 9_000], [0, 9_000, 9_000 + slot]],
    ['after an idle gap the grid starts again from the request', [0, 9_000, 14_000], [0, 9_000, 14_000]],
  ])('%s', async (_name, arrivals, grants) => {
    const { grantsAtArrivals } = setup();
    expectOffsets(await grantsAtArrivals(arrivals), grants);
  });

  // The end of a server window (bucket 1,000, reserve 100): after the request at 0 the answer says
  // 101 left and the reset 7 s away, so one read is usable and the pace announces it for 7 s,
  // past the steady slot (an hour / 899, about 4 s). Later the pace's formula (what is left until
  // the reset) shrinks to that steady slot; a request that asks when the announced moment comes
  // (as the poll loop does, having slept for it) is on time and must not count as sent 3 s
  // earlier, or the next one leaves 1 s after it. A request late for the announced moment keeps
  // its credit.
  it.each([
    [
      'a request that asks at the moment announced for it counts as sent then',
      [7_000, 7_000],
      [0, 7_000, 7_000 + slot],
    ],
    ['a request queued before that moment counts as sent then', [0, 7_000], [0, 7_000, 7_000 + slot]],
    ['a request late for the announced moment counts as sent at it', [8_000, 8_000], [0, 8_000, 7_000 + slot]],
  ])('at the end of a server window, %s', async (_name, arrivals, grants) => {
    const { clock, budget, grantOffsets, grantsAtArrivals, observe } = setup();
    const granted = await grantOffsets(1);
    observe({ limit: 1000, remaining: 101, resetSeconds: 7 });
    expect(budget.earliestSendAt(clock.now()) - T0).toBe(7_000);
    granted.push(...(await grantsAtArrivals(arrivals)));
    expectOffsets(granted, grants);
  });

  // The bound for any allowance: after a request that leaves a millisecond short of a slot late
  // (the most credit the grid gives, whatever the pace) and then as many requests as the allowance,
  // at the pace, every rolling hour holds at most the allowance, and one holds exactly that many.
  // At a pace of the allowance itself (an hour / 900) the first row put 901 reads in a rolling
  // hour, with no server header at all (an attacker's case: the late request counts as sent at its
  // slot, the next leaves just after it). An allowance of 1 gets no credit: with it, the late read
  // and the next would share an hour.
  it.each([900, 100, 2, 1])(
    'an allowance of %i reads an hour holds it in every rolling hour after a late request',
    async (allowance) => {
      const { clock, budget, grantOffsets } = setup({ readsPerHour: allowance, reserve: 0 });
      const slot = budget.intervalMs(clock.now());
      const granted = await grantOffsets(1);
      await clock.advance(2 * slot - 1);
      granted.push(...(await grantOffsets(1)), ...(await grantOffsets(allowance)));
      expect(granted).toHaveLength(allowance + 2);
      expect(busiestHour(granted)).toBe(allowance);
      expect(slot).toBe(HOUR / Math.max(1, allowance - 1));
    },
  );

  // The bound holds for a credit under the steady slot only. Near a window's end the interval is
  // longer: 2 reads usable for 30 s announce the next for 15 s, and a request that asks at 19.5 s
  // is late by 4.5 s, more than a steady slot (an hour / 899, 4,004 ms) but less than the window's
  // interval then (5.25 s). Counted at 15 s, it let the window's answer (reset now) bring back the
  // steady pace from 15 s: the next request left at once, also counted on that grid, and 901 reads
  // shared a rolling hour, none of them an unused read of a window.
  it('a request later than a steady slot near a window end earns no credit, so a reset keeps the rolling hour to the allowance', async () => {
    const { clock, budget, grantOffsets, observe } = setup({ readsPerHour: 900, reserve: 0 });
    const spendSurplus = vi.spyOn(budget as unknown as { spendSurplus: (now: number) => void }, 'spendSurplus');
    const granted = await grantOffsets(1);
    observe({ limit: 1000, remaining: 2, resetSeconds: 30 });
    expect(budget.earliestSendAt(clock.now()) - T0).toBe(15_000);
    await clock.advance(19_500);
    granted.push(...(await grantOffsets(1)));
    observe({ limit: 1000, resetSeconds: 0 });
    granted.push(...(await grantOffsets(900)));
    expect(spendSurplus).not.toHaveBeenCalled();
    expect(busiestHour(granted)).toBeLessThanOrEqual(900);
    expectOffsets(granted.slice(0, 3), [0, 19_500, 19_500 + slot]);
  });
});

describe('ReadBudget after a 429', () => {
  it('lets nothing through until Retry-After has passed, then paces again', async () => {
    const { grantOffsets, observe } = setup({ readsPerHour: 3600, reserve: 0 });
    observe({ status: 429, retryAfterSeconds: 120 });
    expectOffsets(await grantOffsets(3), [120_000, 120_000 + HOUR / 3599, 120_000 + (2 * HOUR) / 3599]);
  });

  it('pauses for the fallback when the 429 carries no Retry-After', async () => {
    const { grantOffsets, observe } = setup({
      readsPerHour: 3600,
      reserve: 0,
      retryAfterFallbackSeconds: 45,
      maxServerPauseSeconds: 3600,
    });
    observe({ status: 429 });
    expect(await grantOffsets(1)).toEqual([45_000]);
  });

  it.each([
    ['Retry-After: 0 and no reset', { retryAfterSeconds: 0 }, 45_000],
    ['no Retry-After and a reset of 0', { resetSeconds: 0 }, 45_000],
    ['Retry-After: 0 and a reset of 0', { retryAfterSeconds: 0, resetSeconds: 0 }, 45_000],
    ['Retry-After: 0 and a reset of 30 s', { retryAfterSeconds: 0, resetSeconds: 30 }, 30_000],
    ['no Retry-After and a reset of 30 s', { resetSeconds: 30 }, 30_000],
  ])('pauses a 429 with %s as it says, and a wait of 0 as the fallback', async (_, headers, pausedMs) => {
    const { grantOffsets, observe } = setup({ readsPerHour: 3600, reserve: 0, retryAfterFallbackSeconds: 45 });
    observe({ status: 429, ...headers });
    expect(await grantOffsets(1)).toEqual([pausedMs]);
  });

  it('clamps a Retry-After beyond maxServerPauseSeconds to it', async () => {
    const { grantOffsets, observe } = setup({ readsPerHour: 3600, reserve: 0, maxServerPauseSeconds: 600 });
    observe({ status: 429, retryAfterSeconds: 99_999_999 });
    expect(await grantOffsets(1)).toEqual([600_000]);
  });

  it('clamps a RateLimit-Reset beyond maxServerPauseSeconds when nothing is left', async () => {
    const { grantOffsets, observe } = setup({ readsPerHour: 3600, reserve: 0 });
    observe({ limit: 3600, remaining: 0, resetSeconds: 99_999_999_999 });
    expect(await grantOffsets(1)).toEqual([3_600_000]);
  });

  it('holds back a waiter that is already queued when a 429 arrives', async () => {
    const { clock, budget, observe } = setup({ readsPerHour: 3600, reserve: 0 });
    await budget.acquire('poll');
    let grantedAt: number | undefined;
    const second = budget.acquire('poll').then(() => (grantedAt = clock.now() - T0));
    await clock.advance(500);
    expect(grantedAt).toBeUndefined();
    observe({ status: 429, retryAfterSeconds: 10 });
    await withVirtualTime(clock, second);
    expect(grantedAt).toBe(10_500);
  });
});

describe('ReadBudget waiters', () => {
  it('wakes a waiter early when a response shows budget again', async () => {
    const { clock, budget, observe } = setup({ readsPerHour: 3600, reserve: 0 });
    observe({ limit: 3600, remaining: 0, resetSeconds: 1800 });
    let grantedAt: number | undefined;
    const waiting = budget.acquire('poll').then(() => (grantedAt = clock.now() - T0));
    await clock.advance(1_000);
    expect(grantedAt).toBeUndefined();
    // Another request's response: the server's window has reset and has plenty left.
    observe({ limit: 3600, remaining: 3000, resetSeconds: 3600 });
    await withVirtualTime(clock, waiting);
    expect(grantedAt).toBe(1_000);
  });

  it('serves the identity-provider log first, then polls, then discovery, then backfill', async () => {
    const { clock, budget } = setup({ readsPerHour: 3600, reserve: 0 });
    await budget.acquire('discovery');
    const order: string[] = [];
    const queue: [string, RequestPriority][] = [
      ['backfill-1', 'backfill'],
      ['discovery-1', 'discovery'],
      ['poll-1', 'poll'],
      ['idp-1', 'identity_provider'],
      ['poll-2', 'poll'],
      ['idp-2', 'identity_provider'],
    ];
    const grants = queue.map(([label, priority]) => budget.acquire(priority).then(() => order.push(label)));
    expect(budget.waiting()).toBe(6);
    expect(budget.waitingAtLeast('discovery')).toBe(5);
    expect(budget.waitingAtLeast('identity_provider')).toBe(2);
    await withVirtualTime(clock, Promise.all(grants));
    expect(order).toEqual(['idp-1', 'idp-2', 'poll-1', 'poll-2', 'discovery-1', 'backfill-1']);
  });

  it('drops an aborted waiter with AbortedError and serves the next in its place', async () => {
    const { clock, budget } = setup({ readsPerHour: 3600, reserve: 0 });
    await budget.acquire('poll');
    const controller = new AbortController();
    const cancelled = budget.acquire('identity_provider', controller.signal);
    let otherAt: number | undefined;
    const other = budget.acquire('discovery').then(() => (otherAt = clock.now() - T0));
    controller.abort();
    await expect(cancelled).rejects.toBeInstanceOf(AbortedError);
    await withVirtualTime(clock, other);
    expect(otherAt).toBeCloseTo(HOUR / 3599, 2);
    expect(budget.snapshot().sent).toBe(2);
  });

  it('refuses at once on a signal that is already aborted, without using a slot', async () => {
    const { clock, budget } = setup({ readsPerHour: 3600, reserve: 0 });
    const controller = new AbortController();
    controller.abort();
    await expect(budget.acquire('poll', controller.signal)).rejects.toBeInstanceOf(AbortedError);
    await budget.acquire('poll');
    expect(clock.now()).toBe(T0);
  });
});
