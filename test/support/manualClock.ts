import { abortedBy, type Clock, type SleepSignal } from '../../src/clock.js';

interface PendingSleep {
  wakeAt: number;
  resolve: () => void;
  reject: (error: Error) => void;
  signal: SleepSignal | undefined;
  onAbort: () => void;
}

/**
 * A clock that only moves when told to. `advance` wakes sleepers in wake-time order and yields
 * to the event loop between them, so code that sleeps in a loop runs as it would in real time.
 */
export class ManualClock implements Clock {
  private current: number;
  private readonly sleepers: PendingSleep[] = [];

  constructor(start: number | Date = Date.UTC(2026, 0, 1)) {
    this.current = typeof start === 'number' ? start : start.getTime();
  }

  now(): number {
    return this.current;
  }

  sleep(ms: number, signal?: SleepSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortedBy(signal));
    return new Promise<void>((resolve, reject) => {
      const entry: PendingSleep = {
        wakeAt: this.current + Math.max(0, ms),
        resolve,
        reject,
        signal,
        onAbort: () => {
          this.remove(entry);
          if (signal) reject(abortedBy(signal));
        },
      };
      signal?.addEventListener('abort', entry.onAbort, { once: true });
      this.sleepers.push(entry);
    });
  }

  /** Earliest pending wake-up, or undefined when nothing sleeps. */
  nextWakeAt(): number | undefined {
    let earliest: number | undefined;
    for (const s of this.sleepers) if (earliest === undefined || s.wakeAt < earliest) earliest = s.wakeAt;
    return earliest;
  }

  /** Moves time forward by `ms`, waking every sleeper due on the way, in order. */
  async advance(ms: number): Promise<void> {
    await this.advanceTo(this.current + ms);
  }

  async advanceTo(target: number): Promise<void> {
    for (;;) {
      await flushMicrotasks();
      const due = this.sleepers.filter((s) => s.wakeAt <= target).sort((a, b) => a.wakeAt - b.wakeAt)[0];
      if (!due) break;
      this.current = Math.max(this.current, due.wakeAt);
      this.remove(due);
      due.signal?.removeEventListener('abort', due.onAbort);
      due.resolve();
    }
    this.current = Math.max(this.current, target);
    await flushMicrotasks();
  }

  private remove(entry: PendingSleep): void {
    const i = this.sleepers.indexOf(entry);
    if (i >= 0) this.sleepers.splice(i, 1);
  }
}

async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
