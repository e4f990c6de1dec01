import { describe, expect, it } from 'vitest';
import type { RetryConfig } from '../../src/sinkContract/deliveryConfig.js';
import { isExhausted, retryDelayMs } from '../../src/deliver/retryPolicy.js';
import { MAX_RETRY_AFTER_MS } from '../../src/retryAfter.js';

const config: RetryConfig = { initialDelayMs: 1_000, maxDelayMs: 30_000, maxAttempts: 5, maxAgeSeconds: 600 };
const fixed = (value: number) => () => value;
/** Just below 1: Math.random never returns 1 itself. */
const TOP = 1 - Number.EPSILON;

describe('retryDelayMs', () => {
  it('draws uniformly below a ceiling that doubles per attempt (full jitter)', () => {
    expect([1, 2, 3, 4].map((attempt) => retryDelayMs(attempt, config, undefined, fixed(TOP)))).toEqual([
      999, 1_999, 3_999, 7_999,
    ]);
    expect([1, 2, 3, 4].map((attempt) => retryDelayMs(attempt, config, undefined, fixed(0.5)))).toEqual([
      500, 1_000, 2_000, 4_000,
    ]);
  });

  it('can retry at once: the lower bound of full jitter is 0', () => {
    expect(retryDelayMs(3, config, undefined, fixed(0))).toBe(0);
  });

  it('never exceeds maxDelayMs, however many attempts', () => {
    expect(retryDelayMs(6, config, undefined, fixed(TOP))).toBe(29_999);
    expect(retryDelayMs(60, config, undefined, fixed(TOP))).toBe(29_999);
    expect(retryDelayMs(5_000, config, undefined, fixed(0.5))).toBe(15_000);
  });

  it('treats attempt 0 like the first attempt', () => {
    expect(retryDelayMs(0, config, undefined, fixed(0.5))).toBe(500);
  });

  it('stays within bounds with the real Math.random', () => {
    for (let i = 0; i < 200; i++) {
      const delay = retryDelayMs(3, config);
      expect(delay).toBeGreaterThanOrEqual(0);
      expect(delay).toBeLessThan(4_000);
    }
  });

  it("takes a destination's Retry-After as a floor", () => {
    expect(retryDelayMs(1, config, 20_000, fixed(0.5))).toBe(20_000);
    // A floor, not a replacement: a longer jittered delay still wins.
    expect(retryDelayMs(5, config, 2_000, fixed(0.5))).toBe(8_000);
  });

  it('lets Retry-After exceed maxDelayMs but caps it at one hour', () => {
    expect(retryDelayMs(1, config, 120_000, fixed(0))).toBe(120_000);
    expect(retryDelayMs(1, config, 7 * 24 * 3_600_000, fixed(0))).toBe(MAX_RETRY_AFTER_MS);
    expect(MAX_RETRY_AFTER_MS).toBe(3_600_000);
  });
});

describe('isExhausted', () => {
  const first = 1_000_000;

  it('gives up once attempts reach maxAttempts', () => {
    expect(isExhausted(4, first, first, config)).toBe(false);
    expect(isExhausted(5, first, first, config)).toBe(true);
  });

  it('gives up once the first attempt is maxAgeSeconds old', () => {
    expect(isExhausted(1, first, first + 599_999, config)).toBe(false);
    expect(isExhausted(1, first, first + 600_000, config)).toBe(true);
  });

  it('retries forever when both limits are 0', () => {
    const unlimited = { ...config, maxAttempts: 0, maxAgeSeconds: 0 };
    expect(isExhausted(1_000_000, first, first + 365 * 86_400_000, unlimited)).toBe(false);
  });

  it('applies each limit alone when the other is 0', () => {
    expect(isExhausted(1_000, first, first, { ...config, maxAttempts: 0 })).toBe(false);
    expect(isExhausted(1, first, first + 600_000, { ...config, maxAttempts: 0 })).toBe(true);
    expect(isExhausted(5, first, first, { ...config, maxAgeSeconds: 0 })).toBe(true);
    expect(isExhausted(4, first, first + 86_400_000, { ...config, maxAgeSeconds: 0 })).toBe(false);
  });
});
