import { setMaxListeners } from 'node:events';
import PQueue from 'p-queue';
import type { Logger } from 'pino';
import type { RequestPriority } from '../api/serviceClient.js';
import type { Clock } from '../clock.js';
import { describeError, isAbortError } from '../errors.js';
import type { LogKind } from '../logs.js';
import type { ChangefeedStore } from '../store/changefeedStore.js';
import { RateEstimates } from '../store/rateEstimates.js';
import type { WatchedLog } from '../store/watchedLogs.js';
import { cronRunsPerHour, discoveryPagesPerRun, nextCronTime } from './discoverySchedule.js';
import { classifyPollFailure } from './failurePolicy.js';
import type { LogPoller, PollResult } from './logPoller.js';
import { PollFailures } from './pollFailures.js';
import { PollScheduler, scheduleKey as keyOf } from '../schedule/pollScheduler.js';
import type { BudgetSnapshot } from './readBudget.js';
import type { WatchConfig } from './watchConfig.js';
import type { WatchRegistry } from './watchRegistry.js';

export type PollLoopState = 'created' | 'running' | 'stopping' | 'stopped';

export interface PollLoopDeps {
  poller: LogPoller;
  registry: WatchRegistry;
  store: ChangefeedStore;
  clock: Clock;
  watch: WatchConfig;
  logger: Logger;
  /** True when the key was replaced (a rotated key file): a pause for a rejected key ends at once. */
  credentialChanged?: () => boolean;
  /** Called after every poll, successful or not (metrics). */
  onPolled?: (watched: WatchedLog, outcome: { result?: PollResult; error?: unknown }) => void;
  /** The key's read budget: polls are chosen when it lets the next request leave. */
  budget?: {
    intervalMs(now: number): number;
    earliestSendAt(now: number): number;
    waiting(): number;
    waitingAtLeast(priority: RequestPriority): number;
    snapshot(): BudgetSnapshot;
  };
  /** Benchmark only: plan with these rates instead of learned ones (the square-root optimum). */
  knownRates?: (key: string) => number | undefined;
  /** The service's clock (from its Date header): performedAt is compared with it, not ours. */
  serviceNow?: () => number;
}

/** Meta key under which the loop leaves the budget's state for `changefeed status`. */
export const BUDGET_META_KEY = 'budget.snapshot';
const BUDGET_META_EVERY_MS = 30_000;

export interface SweepSummary {
  polled: number;
  emitted: number;
  failures: { log: LogKind; objectId: string; error: string }[];
}

const ONCE_ATTEMPTS = 6;
const ACTIVE_REFRESH_MS = 30_000;

/**
 * Polls the active watched logs in the order the scheduler picks, one choice per slot the read
 * budget allows, a few at a time, and runs discovery on its cron schedule. Explicit states;
 * `stop()` is idempotent and waits for the running loop and its polls.
 * No hot loop after an error: failures back off per log, or pause every poll on the key.
 */
export class PollLoop {
  private stateValue: PollLoopState = 'created';
  private readonly abort = new AbortController();
  private readonly queue: PQueue;
  private readonly failures: PollFailures;
  readonly scheduler: PollScheduler;
  private discoveryRunsPerHour = 0;
  private budgetWrittenAt = Number.NEGATIVE_INFINITY;
  private activeCache: WatchedLog[] = [];
  private activeReadAt = Number.NEGATIVE_INFINITY;
  private activeStale = true;
  private readonly inFlight = new Set<string>();
  private wake: AbortController | undefined;
  private running: Promise<void> | undefined;
  private nextDiscoveryAt: number | undefined;

  constructor(private readonly deps: PollLoopDeps) {
    this.queue = new PQueue({ concurrency: deps.watch.concurrency });
    // Each poll in flight listens on the loop's signal (waiting for the budget, then its request),
    // as does discovery: up to twice the concurrency is the design, not a leak.
    setMaxListeners(2 * deps.watch.concurrency + 2, this.abort.signal);
    this.failures = new PollFailures(deps);
    this.scheduler = new PollScheduler({
      config: deps.watch.schedule,
      minIntervalMs: deps.watch.pollIntervalSeconds * 1000,
      budget: deps.budget,
      estimates: new RateEstimates(deps.store.db),
      discoveryPerHour: () => this.discoveryPerHour(),
      knownRates: deps.knownRates,
      serviceNow: deps.serviceNow,
    });
    if (deps.registry.discoveryEnabled)
      this.discoveryRunsPerHour = cronRunsPerHour(deps.watch.discovery.schedule, deps.clock.now());
  }

  get state(): PollLoopState {
    return this.stateValue;
  }

  get signal(): AbortSignal {
    return this.abort.signal;
  }

  start(): void {
    if (this.stateValue !== 'created') return;
    this.stateValue = 'running';
    if (this.deps.registry.discoveryEnabled) this.nextDiscoveryAt = this.deps.clock.now();
    this.running = this.loop().finally(() => {
      this.stateValue = 'stopped';
    });
  }

  async stop(): Promise<void> {
    if (this.stateValue === 'created') this.stateValue = 'stopped';
    if (this.stateValue === 'stopped') return;
    this.stateValue = 'stopping';
    this.abort.abort();
    this.wake?.abort();
    await this.running;
    await this.queue.onIdle();
  }

  /** One poll of every active watched log (after discovery), retrying transient failures. */
  async sweepOnce(): Promise<SweepSummary> {
    const summary: SweepSummary = { polled: 0, emitted: 0, failures: [] };
    if (this.deps.registry.discoveryEnabled) {
      try {
        await this.withRetries(() => this.deps.registry.discover(this.signal), 'discovery');
      } catch (error) {
        summary.failures.push({ log: 'career', objectId: '(discovery)', error: describeError(error) });
      }
    }
    const targets = this.activeLogs();
    // So each poll updates (and persists) the log's learned rate: `run --once` from a cron job
    // learns across runs, and `plan` and `status` show what it learned.
    this.scheduler.sync(targets, this.deps.clock.now());
    await Promise.all(
      targets.map((w) =>
        this.queue.add(async () => {
          try {
            const result = await this.withRetries(() => this.deps.poller.poll(w, this.signal), keyOf(w));
            summary.polled++;
            summary.emitted += result.emitted;
            this.scheduler.recordPoll(w, this.deps.clock.now(), result);
            this.deps.onPolled?.(w, { result });
          } catch (error) {
            if (isAbortError(error)) return;
            this.deps.onPolled?.(w, { error });
            const action = this.failures.failed(w, error, this.deps.clock.now());
            this.activeStale = true;
            // An object that vanished is handled (no longer watched), not a failed sweep.
            if (action.kind === 'disableLog' && action.status === 'gone') return;
            summary.failures.push({ log: w.log, objectId: w.objectId, error: describeError(error) });
          }
        }),
      ),
    );
    return summary;
  }

  private async withRetries<T>(fn: () => Promise<T>, what: string): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (error) {
        const action = classifyPollFailure(error, 'career', 0);
        if (isAbortError(error) || action.kind !== 'retry' || attempt >= ONCE_ATTEMPTS) throw error;
        this.deps.logger.warn(
          { what, attempt, err: describeError(error), requestId: (error as { requestId?: string }).requestId },
          'poll failed; retrying',
        );
        if (!action.budgetPause) await this.deps.clock.sleep(Math.min(10_000, 250 * 2 ** attempt), this.signal);
      }
    }
  }

  private activeLogs(): WatchedLog[] {
    return this.deps.store.watchedLogs
      .list()
      .filter((w) => w.status === 'active')
      .sort((a, b) => Number(b.log === 'identityProvider') - Number(a.log === 'identityProvider'));
  }

  private async loop(): Promise<void> {
    const { clock } = this.deps;
    while (this.stateValue === 'running') {
      const now = clock.now();
      let wakeAt = now + 60_000;
      const pauseWakeAt = this.failures.pauseWakeAt(now);
      if (pauseWakeAt !== undefined) {
        wakeAt = pauseWakeAt;
      } else {
        if (this.nextDiscoveryAt !== undefined && this.nextDiscoveryAt <= now && !this.inFlight.has('discovery')) {
          this.launchDiscovery();
        }
        wakeAt = Math.min(wakeAt, this.launchDuePoll(now));
        // While discovery runs, its end (finally) wakes the loop; its past due time must not.
        if (this.nextDiscoveryAt !== undefined && !this.inFlight.has('discovery'))
          wakeAt = Math.min(wakeAt, Math.max(this.nextDiscoveryAt, now + 50));
      }
      // stop() aborts the wake controller too; checking the state first means a stop that came
      // during this pass is not slept through (and no signal is combined per pass).
      if (this.stateValue !== 'running') break;
      this.wake = new AbortController();
      try {
        await clock.sleep(Math.max(0, wakeAt - now), this.wake.signal);
      } catch (error) {
        if (!isAbortError(error)) throw error;
      }
    }
  }

  /**
   * Launches the scheduler's choice when the budget would let a request leave now; returns when
   * to look again. One choice per pass, so each slot goes to the log most urgent at that moment.
   */
  private launchDuePoll(now: number): number {
    // Re-reading 500 rows for every slot would cost more than the choice; half a minute's lag in
    // seeing a new log is fine (discovery and failures mark the list stale at once).
    if (this.activeStale || now - this.activeReadAt >= ACTIVE_REFRESH_MS) {
      this.activeCache = this.activeLogs();
      this.activeReadAt = now;
      this.activeStale = false;
      this.scheduler.sync(this.activeCache, now);
    }
    // A full queue is woken by the finishing poll; the cap is only a safety net.
    if (this.queue.pending + this.queue.size >= this.deps.watch.concurrency) return now + 60_000;
    const budget = this.deps.budget;
    const sendAt = budget?.earliestSendAt(now) ?? now;
    // Requests already waiting (discovery pages, a poll launched a moment ago) take the next slot;
    // adding a poll now would starve discovery.
    if (budget && budget.waitingAtLeast('discovery') > 0) return Math.max(now + 50, sendAt + 1);
    // Backfill pages take only what regular polls leave: while they wait, a poll is launched as
    // soon as it is due, ahead of the slot, so its request is queued (and served first) when the
    // slot comes; the budget grants the slot the moment it opens, and a loop that waited for it
    // would always find it taken.
    const backfillWaiting = (budget?.waiting() ?? 0) > 0;
    if (sendAt > now && !backfillWaiting) return sendAt;
    let backoffEnds = Number.POSITIVE_INFINITY;
    const eligible = (key: string): boolean => {
      if (this.inFlight.has(key)) return false;
      const until = this.failures.backoffUntil(key);
      if (until > now) backoffEnds = Math.min(backoffEnds, until);
      return until <= now;
    };
    const choice = this.scheduler.pick(now, eligible, { dueOnly: backfillWaiting });
    if ('wakeAt' in choice) return Math.max(now + 50, Math.min(choice.wakeAt, backoffEnds));
    this.launchPoll(choice.poll);
    // Look again at once: the next free slot (concurrency, budget) goes to the next choice.
    return now;
  }

  /** Requests per hour discovery is expected to spend, left out of what polls may use. */
  private discoveryPerHour(): number {
    if (this.discoveryRunsPerHour === 0) return 0;
    const count = (kind: LogKind): number => this.activeCache.filter((w) => w.log === kind).length;
    return (
      discoveryPagesPerRun(this.deps.watch, { careers: count('career'), skills: count('skill') }) *
      this.discoveryRunsPerHour
    );
  }

  private recordSuccess(w: WatchedLog, result: PollResult): void {
    const now = this.deps.clock.now();
    this.failures.succeeded(w);
    this.scheduler.recordPoll(w, now, result);
    const budget = this.deps.budget;
    if (budget && now - this.budgetWrittenAt >= BUDGET_META_EVERY_MS) {
      this.budgetWrittenAt = now;
      this.deps.store.setMeta(
        BUDGET_META_KEY,
        JSON.stringify({ ...budget.snapshot(), at: now, pollBudgetPerHour: this.scheduler.pollBudgetPerHour(now) }),
      );
    }
  }

  private launchPoll(w: WatchedLog): void {
    const key = keyOf(w);
    this.inFlight.add(key);
    void this.queue
      .add(async () => {
        try {
          const result = await this.deps.poller.poll(w, this.signal);
          this.recordSuccess(w, result);
          this.deps.onPolled?.(w, { result });
        } catch (error) {
          if (isAbortError(error) && this.stateValue !== 'running') return;
          this.deps.onPolled?.(w, { error });
          this.failures.failed(w, error, this.deps.clock.now());
          this.activeStale = true;
        }
      })
      .finally(() => {
        this.inFlight.delete(key);
        this.wake?.abort();
      });
  }

  private launchDiscovery(): void {
    this.inFlight.add('discovery');
    void this.queue
      .add(async () => {
        try {
          await this.deps.registry.discover(this.signal);
        } catch (error) {
          if (!isAbortError(error)) {
            this.deps.logger.error(
              { err: describeError(error), requestId: (error as { requestId?: string }).requestId },
              'discovery failed; next attempt on schedule',
            );
          }
        }
      })
      .finally(() => {
        this.inFlight.delete('discovery');
        this.activeStale = true;
        this.nextDiscoveryAt = nextCronTime(this.deps.watch.discovery.schedule, this.deps.clock.now());
        this.wake?.abort();
      });
  }
}
