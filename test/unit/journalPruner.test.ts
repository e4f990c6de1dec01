import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { FIRST_PRUNE_WITHIN_MS, pruneDelayMs, pruneJournalHourly } from '../../src/daemon/journalPruner.js';
import { noopLogger } from '../support/noopLogger.js';
import { makeTempDir } from '../support/tempDir.js';
import { openStore, testClock } from './scriptedSink.js';

describe('pruneDelayMs', () => {
  it.each([
    { round: 0, random: 0, delay: 0 },
    { round: 0, random: 0.5, delay: 300_000 },
    { round: 0, random: 0.999_999, delay: 599_999 },
    { round: 1, random: 0, delay: 3_240_000 },
    { round: 1, random: 0.5, delay: 3_600_000 },
    { round: 7, random: 0.999_999, delay: 3_959_999 },
  ])('round $round, draw $random: $delay ms', ({ round, random, delay }) => {
    expect(pruneDelayMs(round, random)).toBe(delay);
  });

  it('spreads the first prunes of tenants started together over the window', () => {
    const delays = Array.from({ length: 10 }, (_, i) => pruneDelayMs(0, i / 10));
    expect(new Set(delays).size).toBe(10);
    expect(Math.max(...delays)).toBeLessThan(FIRST_PRUNE_WITHIN_MS);
  });
});

describe('pruneJournalHourly', () => {
  it('prunes first at the drawn point of the window, not at start, and passes its stop signal to the store', async () => {
    const clock = testClock();
    const started = clock.now();
    const store = await openStore(join(makeTempDir(), 's.sqlite'), ['out']);
    const prunes = vi.spyOn(store.outbox, 'prune');
    const stop = new AbortController();
    const loop = pruneJournalHourly({
      store,
      clock,
      logger: noopLogger,
      retentionDays: 7,
      signal: stop.signal,
      random: () => 0.5,
    });
    await clock.advance(299_999);
    expect(prunes).not.toHaveBeenCalled();
    await clock.advance(1);
    expect(prunes).toHaveBeenCalledTimes(1);
    await clock.advance(3_599_999);
    expect(prunes).toHaveBeenCalledTimes(1);
    await clock.advance(1);
    expect(prunes.mock.calls).toEqual([
      [started + 300_000 - 7 * 86_400_000, stop.signal],
      [started + 3_900_000 - 7 * 86_400_000, stop.signal],
    ]);
    stop.abort();
    await loop;
    await store.close();
  });
});
