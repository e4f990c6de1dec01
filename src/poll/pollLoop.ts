import { setMaxListeners } from 'node:events';
import PQueue from 'p-queue';
import type { Logger } from 'pino';
import { requestIdOf } from '../api/apiErrors.js';
import type { Clock } from '../clock.js';
import { backoffDelayMs, type BackoffPolicy } from '../backoff.js';
import { describeError, errorCodeOf, isAbortError } from '../errors.js';
import { logKey, type LogKind } from '../logs.js';
import type { ChangefeedStore } from '../store/changefeedStore.js';
import type { WatchedLog } from '../store/storeRecords.js';
import { isStoreBusy, STORE_RETRY_MS } from '../store/storeHealth.js';
import { cronRunsPerHour, discoveryPagesPerRun, firstDiscoveryAt, nextCronTime } from './discoverySchedule.js';
import { classifyPollFailure, onceAfterFailure, pollRetryDelayMs, STORE_BUSY_PAUSE_MS } from './failurePolicy.js';
import type { LogPoller, PollResult } from './logPoller.js';
import { PollRecorder, type PollOutcome } from './pollRecorder.js';
import { ActiveLogs, readActiveLogs } from './activeLogs.js';
import { PollFailures } from './pollFailures.js';
import { nextAction, pauseWakeAt, type LoopSnapshot } from '../schedule/nextAction.js';
import { PollScheduler } from '../schedule/pollScheduler.js';
import type { ReadBudget } from './readBudget.js';
import type { WatchConfig } from './watchConfig.js';
import type { WatchRegistry } from './watchRegistry.js';
import { WakeableSleep } from './wakeableSleep.js';

export type PollLoopState = 'created' | 'running' | 'stopping' | 'stopped';

export interface PollLoopDeps {
  /** What the loop uses of each, so a stand-in (the scheduling model) is checked by the compiler. */
  poller: Pick<LogPoller, 'poll'>;
  registry: Pick<WatchRegistry, 'discoveryEnabled' | 'discoveredLists' | 'lastDiscovery' | 'discover'>;
  store: ChangefeedStore;
  clock: Clock;
  watch: WatchConfig;
  logger: Logger;
  /** ApiKeyProvider.replaces: a pause for a rejected key ends once the key sent now is another. */
  credentialChanged?: (rejectedKey: string | undefined) => boolean;
  /** Called after every poll, successful or not (metrics). */
  onPolled?: (watched: WatchedLog, outcome: { result?: PollResult; error?: unknown }) => void;
  /** The key's read budget: polls are chosen when it lets the next request leave. */
  budget?: Pick<ReadBudget, 'intervalMs' | 'earliestSendAt' | 'waiting' | 'waitingAtLeast' | 'snapshot'>;
  /** Benchmark only: plan with these rates instead of learned ones (the square-root optimum). */
  knownRates?: (key: string) => number | undefined;
  /** The service's clock (from its Date header): performedAt is compared with it, not ours. */
  serviceNow?: () => number;
  /** A write was refused with LEASE_LOST: the tenant's runtime stops (it owns the loop's stop). */
  onLeaseLost?: (error: unknown) => void;
}

export interface SweepSummary {
  polled: number;
  emitted: number;
  failures: { log: LogKind; objectId: string; error: string }[];
}

/** What one `run --once` sweep has done so far: the logs it has still to poll, attempts, and its report. */
interface Sweep {
  summary: SweepSummary;
  remaining: Set<string> | undefined;
  /** Failed attempts so far, per log key, and of discovery under DISCOVERY. */
  attempts: Map<string, number>;
}

/** Pauses of every poll after errors nobody expected: 1 s doubling to a minute. */
const UNEXPECTED_BACKOFF: BackoffPolicy = { initialMs: 1_000, maxMs: 60_000, minMs: 1_000 };
/**
 * Retries of a discovery that failed transiently: 5 s doubling, capped only at a day, so after
 * about eight the cron time comes first and one that fails for good spends the schedule's reads
 * (each run reads every page of the lists), not a run every few minutes.
 */
const DISCOVERY_RETRY_BACKOFF: BackoffPolicy = { initialMs: 5_000, maxMs: 86_400_000, minMs: 1_000 };
/** The in-flight key of a discovery run (a log key always holds a colon, so they never meet). */
const DISCOVERY = 'discovery';

/**
 * Polls the active watched logs in the order the scheduler picks, one choice per slot the read
 * budget allows, a few at a time, and runs discovery on its cron schedule. Explicit states; `stop()`
 * is idempotent and waits for the loop and its polls. Failures back off per log or pause the key.
 */
export class PollLoop {
  private stateValue: PollLoopState = 'created';
  private readonly abort = new AbortController();
  private readonly queue: PQueue;
  private readonly failures: PollFailures;
  readonly scheduler: PollScheduler;
  private discoveryRunsPerHour = 0;
  private readonly recorder: PollRecorder;
  private readonly active: ActiveLogs;
  private ratesRestored = false;
  /** Whether the first discovery's time was read from the store (firstDiscoveryAt); a sweep discovers at once. */
  private discoveryRestored = false;
  private readonly inFlight = new Set<string>();
  /** The wait for the next decision, ended early when a poll or discovery ends. */
  private readonly wake: WakeableSleep;
  private running: Promise<void> | undefined;
  private nextDiscoveryAt: number | undefined;
  /** Discoveries failed transiently in a row (the daemon's, not a sweep's): each retry waits longer, never past the cron time. */
  private discoveriesFailed = 0;
  /** Errors nobody expected in a row, since the last successful poll: each pause is longer. */
  private unexpectedInARow = 0;
  /** Set while `run --once` sweeps: the loop runs in the decision's once mode. */
  private sweep: Sweep | undefined;

  constructor(private readonly deps: PollLoopDeps) {
    this.queue = new PQueue({ concurrency: deps.watch.concurrency });
    this.wake = new WakeableSleep(deps.clock);
    // Each poll in flight listens on the loop's signal (waiting for the budget, then its request),
    // as does discovery: up to twice the concurrency is the design, not a leak.
    setMaxListeners(2 * deps.watch.concurrency + 2, this.abort.signal);
    this.failures = new PollFailures(deps);
    this.active = new ActiveLogs(deps.store);
    this.scheduler = new PollScheduler({
      config: deps.watch.schedule,
      minIntervalMs: deps.watch.pollIntervalSeconds * 1000,
      budget: deps.budget,
      discoveryPerHour: () => this.discoveryPerHour(),
      knownRates: deps.knownRates,
      serviceNow: deps.serviceNow,
    });
    // Object.assign: a spread followed by properties gives each tenant's object a hidden class of
    // its own on Node 20.
    this.recorder = new PollRecorder(Object.assign({}, deps, { failures: this.failures, scheduler: this.scheduler }));
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
    const discovers = this.deps.registry.discoveryEnabled;
    // A sweep discovers first; the daemon keeps the schedule of the last discovery (restoreDiscovery).
    if (discovers && this.sweep) this.nextDiscoveryAt = this.deps.clock.now();
    this.discoveryRestored = !discovers || this.sweep !== undefined;
    this.running = this.loop().finally(() => {
      this.stateValue = 'stopped';
    });
  }

  async stop(): Promise<void> {
    if (this.stateValue === 'created') this.stateValue = 'stopped';
    if (this.stateValue === 'stopped') return;
    this.stateValue = 'stopping';
    this.abort.abort();
    this.wake.wake();
    await this.running;
    await this.queue.onIdle();
  }

  /**
   * `run --once`: the loop in its once mode. Discovery, then one poll of every active watched log,
   * each decided by `nextAction` and launched as in `run`: a failure is classified, recorded and
   * backed off as there, and the failure policy says whether it is tried again or reported.
   */
  async sweepOnce(): Promise<SweepSummary> {
    const sweep: Sweep = {
      summary: { polled: 0, emitted: 0, failures: [] },
      remaining: undefined,
      attempts: new Map(),
    };
    this.sweep = sweep;
    this.start();
    await this.running;
    await this.queue.onIdle();
    return sweep.summary;
  }

  /** What a poll of the sweep came to: done (polled, handled or reported), or tried again after its backoff. */
  private sweepPolled(sweep: Sweep, w: WatchedLog, key: string, outcome: PollOutcome | { error: unknown }): void {
    if ('polled' in outcome && outcome.polled) {
      sweep.summary.polled++;
      sweep.summary.emitted += outcome.result.emitted;
    } else if ('action' in outcome && outcome.action !== undefined) {
      const attempt = (sweep.attempts.get(key) ?? 0) + 1;
      sweep.attempts.set(key, attempt);
      const next = onceAfterFailure(outcome.action, attempt);
      if (next === 'retry') return;
      if (next === 'report')
        sweep.summary.failures.push({ log: w.log, objectId: w.objectId, error: describeError(outcome.error) });
    } else if (!('polled' in outcome)) {
      // An error nobody expected (it went to `failed`): reported, not tried again.
      sweep.summary.failures.push({ log: w.log, objectId: w.objectId, error: describeError(outcome.error) });
    }
    // A poll that was stopped, or refused under a lost lease, ends the log's part without a report.
    sweep.remaining?.delete(key);
  }

  /** When the sweep's discovery runs again after `error`; undefined once it is reported. */
  private sweepDiscoveryFailed(sweep: Sweep, error: unknown): number | undefined {
    const attempt = (sweep.attempts.get(DISCOVERY) ?? 0) + 1;
    sweep.attempts.set(DISCOVERY, attempt);
    // Discovery's list reads are judged by the rules of polls: whether a failure is transient
    // never depends on which log failed.
    const stopped = isAbortError(error) && this.signal.aborted;
    if (!stopped && onceAfterFailure(classifyPollFailure(error, 'career', 0), attempt) === 'retry') {
      this.deps.logger.warn(
        { attempt, err: describeError(error), requestId: requestIdOf(error) },
        'discovery failed; retrying',
      );
      return this.deps.clock.now() + pollRetryDelayMs(attempt);
    }
    sweep.summary.failures.push({ log: 'career', objectId: '(discovery)', error: describeError(error) });
    return undefined;
  }

  /** A plain loop: gather the snapshot, ask `nextAction`, carry out its answer. */
  private async loop(): Promise<void> {
    while (this.stateValue === 'running') {
      let wakeAt: number;
      try {
        wakeAt = await this.pass();
      } catch (error) {
        // A store that does not answer is waited out (its health tells /readyz), not the loop's
        // end; so is anything else, after failed() paused every poll for a while.
        // A sweep cannot wait out a store that does not answer: `run --once` fails with it.
        if (this.sweep) throw error;
        this.failed(error);
        const now = this.deps.clock.now();
        wakeAt = pauseWakeAt(now, this.failures.pause(now)) ?? now + STORE_RETRY_MS;
      }
      // stop() wakes the sleep too; checking the state first means a stop that came during this
      // pass is not slept through (and no signal is combined per pass).
      if (this.stateValue !== 'running') break;
      await this.wake.sleep(Math.max(0, wakeAt - this.deps.clock.now()));
    }
  }

  /** One decision and its launch; returns when to decide again. */
  private async pass(): Promise<number> {
    await this.restoreRates();
    await this.restoreDiscovery();
    const fresh = await this.active.refresh(this.deps.clock.now());
    if (fresh) this.scheduler.sync(fresh);
    const sweep = this.sweep;
    if (sweep && sweep.remaining === undefined && this.nextDiscoveryAt === undefined && !this.inFlight.has(DISCOVERY)) {
      // Discovery has run: the active logs are the ones the sweep polls. Synced so each poll
      // updates (and persists) the log's learned rate: `run --once` from cron learns across runs.
      const targets = await readActiveLogs(this.deps.store);
      this.scheduler.sync(targets);
      sweep.remaining = new Set(targets.map(logKey));
    }
    const now = this.deps.clock.now();
    const action = nextAction(now, this.snapshot(now));
    if ('wakeAt' in action) return action.wakeAt;
    if ('stop' in action) this.stateValue = 'stopping';
    else if ('resume' in action) {
      this.deps.logger.info('the key file changed; resuming polls with the new key');
      this.failures.endPause();
    } else if (action.launch === 'discovery') {
      this.inFlight.add(DISCOVERY);
      this.queue.add(() => this.discoverOnce()).catch((error: unknown) => this.failed(error));
    } else this.launchPoll(action.key);
    // After a launch, yield once before deciding again, so the launched poll can take its slot
    // of the read budget and the next decision sees it.
    return now;
  }

  /** Everything `nextAction` decides on, as of `now`. */
  private snapshot(now: number): LoopSnapshot {
    const budget = this.deps.budget;
    return {
      pause: this.failures.pause(now),
      discovery: { dueAt: this.nextDiscoveryAt, running: this.inFlight.has(DISCOVERY) },
      freeSlots: this.deps.watch.concurrency - this.queue.pending - this.queue.size,
      budget: budget && {
        sendAt: budget.earliestSendAt(now),
        waitingDiscoveryOrHigher: budget.waitingAtLeast('discovery'),
        waiting: budget.waiting(),
      },
      logs: this.scheduler.candidates(now),
      inFlight: this.inFlight,
      backoffUntil: this.failures.backoffs(),
      once: this.sweep && { remaining: this.sweep.remaining },
    };
  }

  /** Rates learned before a restart, once, before the first plan. */
  private async restoreRates(): Promise<void> {
    if (this.ratesRestored) return;
    this.scheduler.restore(await this.deps.store.rates.list());
    this.ratesRestored = true;
  }

  /** When discovery first runs, once, before the first plan: on its schedule after the one the store records. */
  private async restoreDiscovery(): Promise<void> {
    if (this.discoveryRestored) return;
    const { registry, clock, watch, serviceNow } = this.deps;
    const recorded = await registry.lastDiscovery();
    const now = clock.now();
    const offsetMs = serviceNow === undefined ? 0 : serviceNow() - now;
    this.nextDiscoveryAt = firstDiscoveryAt(
      now,
      watch.discovery.schedule,
      recorded,
      registry.discoveredLists,
      offsetMs,
    );
    this.discoveryRestored = true;
  }

  private discoveryPerHour(): number {
    if (this.discoveryRunsPerHour === 0) return 0;
    // Asked by every decision (the scheduler's budget), so counted once per list, not per call.
    const logs = { careers: this.active.count('career'), skills: this.active.count('skill') };
    return discoveryPagesPerRun(this.deps.watch, logs) * this.discoveryRunsPerHour;
  }

  private launchPoll(key: string): void {
    const w = this.scheduler.watchedLog(key);
    if (!w) {
      // Disabled since the sweep read its logs: there is nothing left to poll.
      this.sweep?.remaining?.delete(key);
      return;
    }
    this.inFlight.add(key);
    this.queue.add(() => this.pollOne(w, key)).catch((error: unknown) => this.failed(error));
  }

  private async pollOne(w: WatchedLog, key: string): Promise<void> {
    try {
      const outcome = await this.recorder.pollAndRecord(w, this.signal);
      if (outcome.polled) this.unexpectedInARow = 0;
      else {
        this.active.markStale();
        if (errorCodeOf(outcome.error) === 'LEASE_LOST') this.failed(outcome.error);
      }
      if (this.sweep) this.sweepPolled(this.sweep, w, key, outcome);
    } catch (error) {
      this.failed(error);
      if (this.sweep) this.sweepPolled(this.sweep, w, key, { error });
    } finally {
      this.inFlight.delete(key);
      this.wake.wake();
    }
  }

  private async discoverOnce(): Promise<void> {
    // A sweep runs discovery once; the daemon on its cron schedule.
    const next = (): number | undefined =>
      this.sweep ? undefined : nextCronTime(this.deps.watch.discovery.schedule, this.deps.clock.now());
    try {
      await this.deps.registry.discover(this.signal);
      this.nextDiscoveryAt = next();
      this.discoveriesFailed = 0;
    } catch (error) {
      // A transient failure (by the rules of polls) is tried again after DISCOVERY_RETRY_BACKOFF, so a
      // first discovery that timed out does not leave the tenant's careers and skills unpolled for a
      // whole cron period; a rejected key, a 403, a 404 or a full disk wait for the cron time.
      let backedOff = false;
      if (this.sweep) this.nextDiscoveryAt = this.sweepDiscoveryFailed(this.sweep, error);
      else {
        const cron = nextCronTime(this.deps.watch.discovery.schedule, this.deps.clock.now());
        const { kind } = classifyPollFailure(error, 'career', 0);
        const backoffAt =
          kind === 'retry' || kind === 'storeBusy'
            ? this.deps.clock.now() + backoffDelayMs(++this.discoveriesFailed, DISCOVERY_RETRY_BACKOFF)
            : Infinity;
        backedOff = backoffAt < cron;
        this.nextDiscoveryAt = Math.min(cron, backoffAt);
      }
      if (isAbortError(error) && this.signal.aborted) return;
      // A sweep reports its discovery's failure itself; a lost lease stops the tenant either way.
      if (errorCodeOf(error) === 'LEASE_LOST') this.failed(error);
      else if (this.sweep) return;
      else if (this.deps.store.health.record(error, this.deps.store.location)) this.failed(error);
      else
        this.deps.logger.error(
          {
            err: describeError(error),
            requestId: requestIdOf(error),
            failures: this.discoveriesFailed,
            nextAttemptAt:
              this.nextDiscoveryAt === undefined ? undefined : new Date(this.nextDiscoveryAt).toISOString(),
          },
          backedOff ? 'discovery failed; trying again after a backoff' : 'discovery failed; next attempt on schedule',
        );
    } finally {
      this.inFlight.delete(DISCOVERY);
      this.active.markStale();
      this.wake.wake();
    }
  }

  /**
   * The one error route of the loop and of every poll and discovery it launches. LEASE_LOST: the
   * tenant's runtime is told and stops (polling and delivery together). A store that refused:
   * every poll waits as for STORE_UNAVAILABLE. Anything else nobody expected: logged once per run
   * of such errors, and every poll waits a growing backoff, so a bug cannot turn into a hot loop.
   */
  private failed(error: unknown): void {
    if (this.signal.aborted) return;
    const now = this.deps.clock.now();
    if (errorCodeOf(error) === 'LEASE_LOST') {
      this.deps.onLeaseLost?.(error);
      return;
    }
    const { store, logger } = this.deps;
    if (isStoreBusy(error)) {
      // Back-pressure of a full pool, counted by changefeed_store_pool_busy_total: a moment's wait.
      this.failures.pauseFor(now, STORE_BUSY_PAUSE_MS);
      return;
    }
    const first = store.health.problem === undefined;
    if (store.health.record(error, store.location)) {
      if (first) logger.warn({ err: describeError(error) }, 'the store refused: polling pauses until a write succeeds');
      this.failures.pauseForStore(now);
      return;
    }
    this.unexpectedInARow++;
    const pauseMs = backoffDelayMs(this.unexpectedInARow, UNEXPECTED_BACKOFF);
    this.failures.pauseFor(now, pauseMs);
    if (this.unexpectedInARow === 1)
      logger.error(
        { err: describeError(error), pauseSeconds: Math.ceil(pauseMs / 1000) },
        'polling failed unexpectedly; every poll backs off until one succeeds',
      );
  }
}
