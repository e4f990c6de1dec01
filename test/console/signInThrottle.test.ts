import { describe, expect, it } from 'vitest';
import {
  FAILURES_IN_ALL,
  FAILURES_PER_ADDRESS,
  SIGN_IN_WINDOW_MS,
  SignInThrottle,
} from '../../src/console/signInThrottle.js';

const T0 = 1_000_000;

/** A throttle after `failures` wrong tokens, each [address, at]. */
function after(failures: readonly (readonly [string, number])[]): SignInThrottle {
  const throttle = new SignInThrottle();
  for (const [address, at] of failures) throttle.failed(address, at);
  return throttle;
}

const times = (n: number, address: string | ((i: number) => string), at = T0) =>
  Array.from({ length: n }, (_, i) => [typeof address === 'string' ? address : address(i), at] as const);

describe('SignInThrottle', () => {
  it.each<{ name: string; failures: (readonly [string, number])[]; address: string; now: number; waitMs: number }>([
    { name: 'nothing failed', failures: [], address: 'a', now: T0, waitMs: 0 },
    {
      name: 'one failure short of the limit',
      failures: times(FAILURES_PER_ADDRESS - 1, 'a'),
      address: 'a',
      now: T0 + 1,
      waitMs: 0,
    },
    {
      name: 'the limit reached: waits for the window to end',
      failures: times(FAILURES_PER_ADDRESS, 'a'),
      address: 'a',
      now: T0 + 60_000,
      waitMs: SIGN_IN_WINDOW_MS - 60_000,
    },
    {
      name: 'another address is not held back',
      failures: times(FAILURES_PER_ADDRESS, 'a'),
      address: 'b',
      now: T0,
      waitMs: 0,
    },
    {
      name: 'the next window starts afresh',
      failures: times(FAILURES_PER_ADDRESS, 'a'),
      address: 'a',
      now: T0 + SIGN_IN_WINDOW_MS,
      waitMs: 0,
    },
    {
      name: 'failures spread over many addresses reach the bound in all',
      failures: times(FAILURES_IN_ALL, (i) => `10.0.${Math.floor(i / 250)}.${i % 250}`),
      address: 'fresh',
      now: T0 + 1_000,
      waitMs: SIGN_IN_WINDOW_MS - 1_000,
    },
  ])('$name', ({ failures, address, now, waitMs }) => {
    expect(after(failures).waitMs(address, now)).toBe(waitMs);
  });

  it('forgets the failures of an address that signs in with a right token', () => {
    const throttle = after(times(FAILURES_PER_ADDRESS - 1, 'a'));
    throttle.succeeded('a');
    throttle.failed('a', T0);
    expect(throttle.waitMs('a', T0)).toBe(0);
  });
});
