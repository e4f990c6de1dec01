import { describe, expect, it } from 'vitest';
import { AbortedError } from '../../src/errors.js';
import { systemClock, type Clock } from '../../src/clock.js';
import { ManualClock } from '../support/manualClock.js';
import { abortControllersBuilt } from '../support/abortControllersBuilt.js';
import { WakeableSleep } from '../../src/poll/wakeableSleep.js';

/** Resolves to how long (clock ms) `sleep` took, advancing `clock` in 100 ms steps and calling `during` after the first (so a woken sleep took 100). */
async function timed(clock: ManualClock, sleep: Promise<void>, during?: () => void): Promise<number> {
  const start = clock.now();
  let ended: number | undefined;
  const done = sleep.then(() => (ended = clock.now()));
  for (let step = 0; ended === undefined && step < 100; step++) {
    await clock.advance(100);
    if (step === 0) during?.();
  }
  await done;
  return (ended ?? Number.NaN) - start;
}

describe('WakeableSleep', () => {
  it('sleeps its whole time when nobody wakes it', async () => {
    const clock = new ManualClock();
    expect(await timed(clock, new WakeableSleep(clock).sleep(1_000))).toBe(1_000);
  });

  it('ends at once when woken, and resolves rather than rejects', async () => {
    const clock = new ManualClock();
    const wake = new WakeableSleep(clock);
    expect(await timed(clock, wake.sleep(5_000), () => wake.wake())).toBe(100);
  });

  it('drops a wake that comes while nothing sleeps: the next sleep lasts its time', async () => {
    const clock = new ManualClock();
    const wake = new WakeableSleep(clock);
    wake.wake();
    expect(await timed(clock, wake.sleep(1_000))).toBe(1_000);
  });

  it('can be woken again after a sleep that ended on time and after one that was woken', async () => {
    const clock = new ManualClock();
    const wake = new WakeableSleep(clock);
    expect(await timed(clock, wake.sleep(300))).toBe(300);
    expect(await timed(clock, wake.sleep(5_000), () => wake.wake())).toBe(100);
    expect(await timed(clock, wake.sleep(5_000), () => wake.wake())).toBe(100);
    expect(await timed(clock, wake.sleep(300))).toBe(300);
  });

  it('is woken again and again without an AbortController per wake', async () => {
    const clock = new ManualClock();
    const wake = new WakeableSleep(clock);
    const built = await abortControllersBuilt(async () => {
      for (let i = 0; i < 5; i++) expect(await timed(clock, wake.sleep(5_000), () => wake.wake())).toBe(100);
    });
    expect(built).toBe(0);
  });

  it('ends a sleep whose clock listens only after an await, when the wake came first', async () => {
    const clock = new ManualClock();
    const late: Clock = {
      now: () => clock.now(),
      sleep: async (ms, signal) => {
        await Promise.resolve();
        await clock.sleep(ms, signal);
      },
    };
    const wake = new WakeableSleep(late);
    const sleeping = wake.sleep(5_000);
    wake.wake();
    expect(await timed(clock, sleeping)).toBe(0);
  });

  it('wakes a sleep on the system clock', async () => {
    const wake = new WakeableSleep(systemClock);
    const started = performance.now();
    const sleeping = wake.sleep(60_000);
    setTimeout(() => wake.wake(), 20);
    await sleeping;
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});

// Each wake used to build a DOMException (abort() without a reason) and the clock a new
// AbortedError, both with stacks: 3 to 4% of the daemon's CPU at 1,000 tenants.
describe('the clocks, aborted with an AbortedError as the reason', () => {
  it.each([
    ['systemClock', systemClock],
    ['ManualClock', new ManualClock()],
  ])('%s rejects with that very error, before and during the sleep', async (_name, clock) => {
    const reason = new AbortedError('woken early');
    const during = new AbortController();
    const sleeping = clock.sleep(60_000, during.signal);
    during.abort(reason);
    await expect(sleeping).rejects.toBe(reason);
    await expect(clock.sleep(60_000, during.signal)).rejects.toBe(reason);
  });

  it.each([
    ['systemClock', systemClock],
    ['ManualClock', new ManualClock()],
  ])('%s rejects with a new AbortedError for any other reason', async (_name, clock) => {
    const abort = new AbortController();
    const sleeping = clock.sleep(60_000, abort.signal);
    abort.abort();
    await expect(sleeping).rejects.toBeInstanceOf(AbortedError);
  });
});
