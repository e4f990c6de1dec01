import { systemClock, type Clock, type SleepSignal } from '../../src/clock.js';

/**
 * The wall clock sped up `scale` times, from `start`: a scaled hour passes in 3600 / scale real
 * seconds. Unlike the quiet-clock driver's virtual time, everything real costs scaled time here:
 * loopback latency, the event loop's queue, SQLite commits, each `scale` times longer than they
 * take, as the daemon lives them on a machine `scale` times slower.
 */
export class ScaledClock implements Clock {
  private readonly origin = performance.now();

  constructor(
    private readonly start: number,
    readonly scale: number,
  ) {
    if (!(scale >= 1)) throw new Error(`a time scale is at least 1 (got ${scale})`);
  }

  now(): number {
    return Math.floor(this.start + (performance.now() - this.origin) * this.scale);
  }

  sleep(ms: number, signal?: SleepSignal): Promise<void> {
    return systemClock.sleep(ms / this.scale, signal);
  }
}
