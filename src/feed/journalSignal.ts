import type { Clock } from '../clock.js';

/**
 * Wakes the feed's waiting readers (long-polls, live streams) when events were appended to the
 * journal. Only a hint: readers read the journal again after every wake and on their own timer,
 * so a missed or spurious notification costs a read, never an event.
 */
export class JournalSignal {
  private readonly waiters = new Set<() => void>();

  constructor(private readonly clock: Clock) {}

  notify(): void {
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const wake of waiters) wake();
  }

  /** Resolves at the next notify, after `ms` on the clock, or when `signal` aborts; never rejects. */
  async next(ms: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    const done = new AbortController();
    const stop = () => done.abort();
    signal.addEventListener('abort', stop, { once: true });
    let wake: () => void = () => undefined;
    const woken = new Promise<void>((resolve) => {
      wake = resolve;
      done.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    this.waiters.add(wake);
    try {
      await Promise.race([woken, this.clock.sleep(ms, done.signal).catch(() => undefined)]);
    } finally {
      this.waiters.delete(wake);
      signal.removeEventListener('abort', stop);
      done.abort();
    }
  }
}
