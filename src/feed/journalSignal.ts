import type { Clock } from '../clock.js';

/**
 * Wakes the feed's waiting readers (long-polls, live streams) when events were appended to the
 * journal. Only a hint: readers read the journal again after every wake and on their own timer,
 * so a missed or spurious notification costs a read, never an event.
 *
 * The journal is read asynchronously, so an append can land between a reader's read and its
 * wait: a reader takes `generation` before reading and passes it to `next`, which then returns
 * at once if a notification came in between instead of sleeping through it.
 */
export class JournalSignal {
  private readonly waiters = new Set<() => void>();
  private notified = 0;

  constructor(private readonly clock: Clock) {}

  /** Counts notifications; see `next`. */
  get generation(): number {
    return this.notified;
  }

  notify(): void {
    this.notified++;
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const wake of waiters) wake();
  }

  /**
   * Resolves at the next notify, after `ms` on the clock, or when `signal` aborts; never rejects.
   * At once when a notification came since `generation` was `since`.
   */
  async next(ms: number, signal: AbortSignal, since?: number): Promise<void> {
    if (signal.aborted || (since !== undefined && since !== this.notified)) return;
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
