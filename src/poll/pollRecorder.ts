import { describeError, errorCodeOf, isAbortError } from '../errors.js';
import type { PollScheduler } from '../schedule/pollScheduler.js';
import type { DeferredState, RateEstimateRow, WatchedLog } from '../store/storeRecords.js';
import type { FailureAction } from './failurePolicy.js';
import type { PollResult } from './logPoller.js';
import type { PollLoopDeps } from './pollLoop.js';
import type { PollFailures } from './pollFailures.js';
import { addPollSample, mergePollHours, parsePollHours, POLL_HOURS_META_KEY, type PollHour } from './pollHours.js';
import type { ReadBudget } from './readBudget.js';

/** Meta key under which the budget's state is left for `changefeed status`. */
export const BUDGET_META_KEY = 'budget.snapshot';
const BUDGET_META_EVERY_MS = 30_000;

type PollRecorderDeps = Pick<PollLoopDeps, 'poller' | 'store' | 'clock' | 'logger' | 'onPolled'> & {
  scheduler: PollScheduler;
  failures: PollFailures;
  budget?: Pick<ReadBudget, 'snapshot'> | undefined;
};

export type PollOutcome =
  | { polled: true; result: PollResult }
  /** `action` is what the failure policy made of the error; absent when the poll was stopped. */
  | { polled: false; error: unknown; action?: FailureAction };

/**
 * The one launch path of a poll, for `run` and `run --once` alike: poll one log, then record
 * what came of it (the learned rate, a failure's backoff or pause, metrics, the budget's state
 * for `status`), so a cron job's `run --once` learns across runs as the daemon does.
 */
export class PollRecorder {
  private budgetWrittenAt = Number.NEGATIVE_INFINITY;
  /** The day of polling by hour (pollHours.ts); merged with what the store holds at the first write. */
  private hours: PollHour[] = [];
  private hoursLoaded = false;
  /** The budget's `sent` at the previous sample: requests per hour count every request, not only polls. */
  private sentBefore = 0;

  constructor(private readonly deps: PollRecorderDeps) {}

  async pollAndRecord(w: WatchedLog, signal: AbortSignal): Promise<PollOutcome> {
    const { poller, scheduler, failures, clock } = this.deps;
    try {
      const result = await poller.poll(w, signal);
      const now = clock.now();
      this.sample(w, now, { failed: false, events: result.emitted, requests: result.requests });
      failures.succeeded(w);
      const learned = scheduler.recordPoll(w, now, result);
      await this.persist(learned, now);
      this.deps.onPolled?.(w, { result });
      return { polled: true, result };
    } catch (error) {
      if (isAbortError(error) && signal.aborted) return { polled: false, error };
      // The lease is gone (the client refused to send): nothing may be recorded, and the loop
      // stops the tenant's runtime.
      if (errorCodeOf(error) === 'LEASE_LOST') return { polled: false, error };
      this.deps.onPolled?.(w, { error });
      this.sample(w, clock.now(), { failed: true, events: 0, requests: 0 });
      try {
        return { polled: false, error, action: await failures.failed(w, error, clock.now()) };
      } catch (recordError) {
        // As above: a lost lease is the outcome, and the loop stops the tenant's runtime.
        if (errorCodeOf(recordError) === 'LEASE_LOST') return { polled: false, error: recordError };
        throw recordError;
      }
    }
  }

  /** Counts a poll in its hour, with its log's lag as it began. */
  private sample(w: WatchedLog, now: number, poll: { failed: boolean; events: number; requests: number }): void {
    const budget = this.deps.budget?.snapshot();
    const requests = budget ? Math.max(0, budget.sent - this.sentBefore) : poll.requests;
    if (budget) this.sentBefore = budget.sent;
    this.hours = addPollSample(this.hours, {
      now,
      requests,
      allowancePerHour: budget?.allowancePerHour,
      lagMs: w.windowEnd === null ? null : now - w.windowEnd,
      failed: poll.failed,
      events: poll.events,
    });
  }

  /**
   * The learned rate and, now and then, the budget's state and the hours of polling, for
   * restarts, `status` and the console: deferred to the tenant's next write transaction
   * (store.deferState), so a poll costs the store its ingest alone. A store that refuses them
   * loses only a refinement: the poll itself is already committed.
   */
  private async persist(learned: RateEstimateRow | undefined, now: number): Promise<void> {
    const { store, budget, logger } = this.deps;
    try {
      const state: DeferredState = learned ? { rates: [learned] } : {};
      let first = false;
      if (now - this.budgetWrittenAt >= BUDGET_META_EVERY_MS) {
        this.budgetWrittenAt = now;
        if (!this.hoursLoaded) {
          this.hours = mergePollHours(parsePollHours(await store.getMeta(POLL_HOURS_META_KEY)), this.hours);
          this.hoursLoaded = true;
          first = true;
        }
        const meta: Record<string, string> = { [POLL_HOURS_META_KEY]: JSON.stringify(this.hours) };
        if (budget) {
          const pollBudgetPerHour = this.deps.scheduler.pollBudgetPerHour(now);
          meta[BUDGET_META_KEY] = JSON.stringify({ ...budget.snapshot(), at: now, pollBudgetPerHour });
        }
        state.meta = meta;
      }
      store.deferState(state);
      // The holder's first record is written now, not with the next write: that can be
      // DEFERRED_STATE_FLUSH_MS away on a quiet tenant (a read of nothing writes nothing on
      // PostgreSQL), and until then the console draws no hour and `status` shows no budget.
      if (first) await store.flushDeferred();
    } catch (error) {
      if (!store.health.record(error, store.location)) throw error;
      logger.debug({ err: describeError(error) }, 'learned rate not recorded: the store cannot be written');
    }
  }
}
