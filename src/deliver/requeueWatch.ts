import type { Clock } from '../clock.js';
import { describeError, isAbortError } from '../errors.js';
import type { Logger } from 'pino';
import type { DeadLetterStore } from '../store/changefeedStore.js';

/** How often the store's re-queue counts are read: a CLI that re-queued dead letters has no way to notify. */
export const REQUEUE_CHECK_MS = 500;

interface Watcher {
  readonly deadLetters: DeadLetterStore;
  readonly onRequeued: () => void;
  /** The count of the last check that answered; undefined before the first. */
  seen: number | undefined;
}

/**
 * Watches the re-queue counts of every delivery engine of a process with one timer, not one per
 * engine (thousands of idle wakes a second at thousands of tenants): the store answers all the
 * tenants' counts from one statement (RequeueCounts), and only the engines whose count changed hear of it.
 */
export class RequeueWatch {
  private readonly watchers = new Set<Watcher>();
  /** Ends the loop's sleep once nobody watches. */
  private idle: AbortController | undefined;
  /** The loop, and one still finishing its check after the last watcher left. */
  private readonly loops = new Set<Promise<void>>();
  /** Checks in a row that a store did not answer: said at the first and when one answers again. */
  private failedChecks = 0;

  constructor(
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  /** Calls `onRequeued` after each check that saw `deadLetters`' count change, until `signal` aborts. */
  watch(deadLetters: DeadLetterStore, onRequeued: () => void, signal: AbortSignal): void {
    if (signal.aborted) return;
    const watcher: Watcher = { deadLetters, onRequeued, seen: undefined };
    this.watchers.add(watcher);
    signal.addEventListener('abort', () => this.unwatch(watcher), { once: true });
    // The count to compare with is taken now, as the engine's workers read their outbox, not at
    // the next check: a re-queue in between would never be seen. One that fails leaves it to the check.
    watcher.deadLetters.requeueCount().then(
      (count) => {
        watcher.seen ??= count;
      },
      () => undefined,
    );
    if (this.idle) return;
    this.idle = new AbortController();
    const loop = this.run(this.idle.signal).finally(() => this.loops.delete(loop));
    this.loops.add(loop);
  }

  /** Resolves once no check is under way and no loop runs (after the last watcher left). */
  async stopped(): Promise<void> {
    await Promise.all(this.loops);
  }

  private unwatch(watcher: Watcher): void {
    this.watchers.delete(watcher);
    if (this.watchers.size > 0) return;
    this.idle?.abort();
    this.idle = undefined;
  }

  private async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.clock.sleep(REQUEUE_CHECK_MS, signal).catch((error: unknown) => {
        if (!isAbortError(error)) throw error;
      });
      if (!signal.aborted) await this.check();
    }
  }

  private async check(): Promise<void> {
    const watchers = [...this.watchers];
    const results = await Promise.allSettled(watchers.map((w) => w.deadLetters.requeueCount()));
    let failed = 0;
    let firstError: unknown;
    results.forEach((result, i) => {
      const watcher = watchers[i];
      if (!watcher) return;
      if (result.status === 'rejected') {
        if (failed++ === 0) firstError = result.reason;
        return;
      }
      const changed = watcher.seen !== undefined && result.value !== watcher.seen;
      watcher.seen = result.value;
      // A watcher that left during the read has stopped its workers: nothing to wake.
      if (changed && this.watchers.has(watcher)) watcher.onRequeued();
    });
    // A store that does not answer is the workers' outage to report (readiness, their own lines);
    // the next check tries again. Said once, not at every check: two lines a second for as long as
    // a database is away, the outage's own lines lost among them.
    if (failed > 0) {
      if (this.failedChecks++ === 0)
        this.logger.warn(
          { err: describeError(firstError), engines: failed },
          'checking for re-queued dead letters failed; trying again at every check, said again once it answers',
        );
    } else if (this.failedChecks > 0) {
      this.logger.info({ failedChecks: this.failedChecks }, 'checking for re-queued dead letters answers again');
      this.failedChecks = 0;
    }
  }
}
