import { describe, expect, it } from 'vitest';
import { MAX_TIMER_MS, systemClock, timerDelayMs } from '../../src/clock.js';

describe('timerDelayMs', () => {
  it.each([
    [-5, 0],
    [Number.NaN, 0],
    [0, 0],
    [1500, 1500],
    [MAX_TIMER_MS, MAX_TIMER_MS],
    [MAX_TIMER_MS + 1, MAX_TIMER_MS],
    [Number.POSITIVE_INFINITY, MAX_TIMER_MS],
  ])('%d -> %d', (input, expected) => {
    expect(timerDelayMs(input)).toBe(expected);
  });
});

// A delay beyond 2^31-1 ms made Node warn (TimeoutOverflowWarning) and fire after 1 ms: a read
// budget told by a header to wait 3 years spun at 15-26% CPU with 11,000 warnings in 15 s.
describe('systemClock.sleep', () => {
  it('arms no timer beyond 2^31-1 ms, and a long sleep does not end early', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error): void => {
      warnings.push(w.name);
    };
    process.on('warning', onWarning);
    const abort = new AbortController();
    let ended = false;
    const sleeping = systemClock.sleep(99_999_999_999_000, abort.signal).then(
      () => (ended = true),
      () => undefined,
    );
    // Warnings are emitted on the next tick; a few macrotask turns let an early wake-up show too.
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    abort.abort();
    await sleeping;
    process.off('warning', onWarning);
    expect(warnings.filter((name) => name === 'TimeoutOverflowWarning')).toEqual([]);
    expect(ended).toBe(false);
  });
});
