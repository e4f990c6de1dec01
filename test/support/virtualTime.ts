import type { ManualClock } from '../../src/clock.js';

const realPause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs `work` on a ManualClock: whenever it has waited a moment in real time (loopback I/O is
 * quick), the clock jumps to the next sleeper's wake-up. Lets a test cover an hour of budget
 * pacing or a Retry-After in a second, while HTTP still goes over real sockets.
 */
export async function withVirtualTime<T>(
  clock: ManualClock,
  work: Promise<T>,
  options: { maxVirtualMs?: number; settleMs?: number } = {},
): Promise<T> {
  let settled = false;
  const guarded = work.finally(() => {
    settled = true;
  });
  const start = clock.now();
  const limit = options.maxVirtualMs ?? 24 * 3_600_000;
  while (!settled) {
    await realPause(options.settleMs ?? 3);
    if (settled) break;
    const next = clock.nextWakeAt();
    if (next !== undefined) {
      if (next - start > limit) throw new Error(`virtual time passed its limit of ${limit} ms`);
      await clock.advanceTo(next);
    }
  }
  return guarded;
}
