import { describe, expect, it } from 'vitest';
import { nextRoundAt } from '../../src/cluster/roundCadence.js';

const row = (holder: string | undefined, expiresInMs: number, holderLiveForMs: number) => ({
  holder,
  expiresInMs,
  holderLiveForMs,
});

describe('nextRoundAt', () => {
  // Rounds every 5 s: the regular next round is at 5,000; the rows were read at 1,000.
  const base = { me: 'a', regularAt: 5_000, readAt: 1_000 };
  it.each([
    ['no other holder: the regular round', [row('a', 2_000, 15_000), row(undefined, -1, -Infinity)], 5_000],
    ['live holders renewing: their leases end after the regular round', [row('b', 12_000, 14_000)], 5_000],
    ['a dead holder: when its lease expires and its heartbeat is a lease old', [row('b', 2_000, 2_010)], 3_060],
    ['expired but still heartbeating: when it stops counting as live', [row('b', -500, 1_500)], 2_550],
    ['still live long after its lease ends: the regular round', [row('b', 1_000, 14_000)], 5_000],
    ['free already (dealt by this round): no round sooner', [row('b', -10, -5)], 5_000],
    ['the earliest of several', [row('b', 3_000, 3_000), row('c', 1_000, 1_200), row('a', 100, 100)], 2_250],
  ])('%s', (_, rows, expected) => {
    expect(nextRoundAt({ ...base, rows })).toBe(expected);
  });
});
