import { afterEach, describe, expect, it, vi } from 'vitest';
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

// systemClock.sleep re-armed its timer on Date.now(): a wall clock set back an hour (NTP, an
// operator, a VM resumed) stretched every sleep in progress by an hour.
describe('systemClock with the wall clock set back an hour', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });
  const setWallClockBack = (): void => {
    const wallNow = Date.now.bind(Date);
    vi.spyOn(Date, 'now').mockImplementation(() => wallNow() - 3_600_000);
  };

  it('a sleep in progress ends on time, before a 200 ms timer started with it', async () => {
    const slept = systemClock.sleep(50).then(() => 'slept');
    setWallClockBack();
    const timer = new Promise((resolve) => setTimeout(() => resolve('200 ms timer'), 200));
    expect(await Promise.race([slept, timer])).toBe('slept');
  });

  it('now() does not go back with it, so no deadline measured on it moves', () => {
    const before = systemClock.now();
    setWallClockBack();
    expect(systemClock.now()).toBeGreaterThanOrEqual(before);
  });
});
