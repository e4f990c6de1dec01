import { describe, expect, it } from 'vitest';
import { firstPollSlotHolds, firstPollSlotMs } from '../../src/schedule/firstPollSlot.js';
import { latestFirstPollStarts, type FirstPoll } from '../../src/schedule/pollAllocation.js';

describe('firstPollSlotMs', () => {
  it.each([
    ['one first poll: a quarter of a slot longer (half the half-slot margin)', 4_000, 1, 5_000],
    ['26 first polls: a 104th longer', 4_000, 26, 4_000 * (1 + 0.5 / 52)],
    ['a chain cost under 1 counts as 1', 4_000, 0.2, 5_000],
    ['no budget (slot 0) stays 0', 0, 26, 0],
  ] as const)('%s', (_name, slotMs, chainCost, expected) => {
    expect(firstPollSlotMs(slotMs, chainCost)).toBeCloseTo(expected, 9);
  });

  it('reckons a slot that holds at the pace it was reckoned at', () => {
    for (const chainCost of [1, 3, 26, 300])
      expect(firstPollSlotHolds(firstPollSlotMs(4_000, chainCost), 4_000, chainCost)).toBe(true);
  });
});

describe('firstPollSlotHolds', () => {
  it.each([
    ['the slot it was reckoned at', 4_040, 4_040, 26, true],
    ['a pace a little faster: starts at most half a slot early', 4_040, 4_000, 26, true],
    ['a pace a little slower, still under the reckoned slot', 4_040, 4_030, 26, true],
    ['a pace slower than reckoned: the starts would be late', 4_040, 4_041, 26, false],
    ['a pace so much faster the starts are over half a slot early', 4_040, 3_960, 26, false],
    ['the same change with a short chain moves the starts less', 4_040, 3_960, 2, true],
    ['no budget then or now', 0, 0, 26, true],
    ['a budget now where there was none', 0, 4_000, 26, false],
    ['no budget now where there was one: starts a chain of slots early', 4_000, 0, 26, false],
  ] as const)('%s', (_name, reckonedSlotMs, slotMs, chainCost, holds) => {
    expect(firstPollSlotHolds(reckonedSlotMs, slotMs, chainCost)).toBe(holds);
  });

  it('while it holds, every start is no later than the exact one and at most half a slot earlier', () => {
    const D = Date.UTC(2026, 0, 1, 8, 1);
    const chains: FirstPoll[][] = [
      Array.from({ length: 26 }, () => ({ deadline: D, cost: 1 })),
      Array.from({ length: 26 }, (_, i) => ({ deadline: D + (i % 5) * 3_000, cost: 1 + (i % 3) * 0.7 })),
      [
        { deadline: D, cost: 1 },
        { deadline: D + 600_000, cost: 2 },
      ],
    ];
    for (const chain of chains) {
      const chainCost = chain.reduce((sum, p) => sum + Math.max(1, p.cost), 0);
      const reckonedSlotMs = firstPollSlotMs(4_000, chainCost);
      const kept = latestFirstPollStarts(chain, reckonedSlotMs);
      for (let slotMs = 3_800; slotMs <= 4_200; slotMs += 1) {
        if (!firstPollSlotHolds(reckonedSlotMs, slotMs, chainCost)) continue;
        const exact = latestFirstPollStarts(chain, slotMs);
        kept.forEach((start, i) => {
          expect(start).toBeLessThanOrEqual(exact[i]! + 1e-6);
          expect(start).toBeGreaterThanOrEqual(exact[i]! - slotMs / 2 - 1e-6);
        });
      }
    }
  });
});
