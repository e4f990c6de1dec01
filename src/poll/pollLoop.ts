import { CronTime } from 'cron';
import PQueue from 'p-queue';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { describeError, isAbortError } from '../errors.js';
import type { LogKind } from '../logs.js';
import type { ChangefeedStore } from '../store/changefeedStore.js';
import type { WatchedLog } from '../store/watchedLogs.js';
import { classifyPollFailure, pollRetryDelayMs, type FailureAction } from './failurePolicy.js';
import type { LogPoller, PollResult } from './logPoller.js';
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
  /** Called after every poll, successful or not (metrics, the scheduler's rate estimates). */
  onPolled?: (watched: WatchedLog, outcome: { result?: PollResult; error?: unknown }) => void;
}

export interface SweepSummary {
  polled: number;
  emitted: number;
  failures: { log: LogKind; objectId: string; error: string }[];
}

const keyOf = (w: { log: LogKind; objectId: string }): string => `${w.log}:${w.objectId}`;
const ONCE_ATTEMPTS = 6;

/**
 * Polls every active watched log on its schedule, a few at a time, and runs discovery on its cron
 * schedule. Explicit states; `stop()` is idempotent and waits for the running loop and its polls.
 * No hot loop after an error: failures back off per log, or pause every poll on the key.
 */
export class PollLoop {
  private stateValue: PollLoopState = 'created';
  private readonly abort = new AbortController();
  private readonly queue: PQueue;
  private readonly nextPollAt = new Map<string, number>();
  private readonly inFlight = new Set<string>();
  private pausedUntil = 0;
  /** The pause is for a rejected key: it ends as soon as the key file changes. */
  private pausedForCredential = false;
  private authFailures = 0;
  private wake: AbortController | undefined;
  private running: Promise<void> | undefined;
  private nextDiscoveryAt: number | undefined;

  constructor(private readonly deps: PollLoopDeps) {
    this.queue = new PQueue({ concurrency: deps.watch.concurrency });
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
    await Promise.all(
      targets.map((w) =>
        this.queue.add(async () => {
          try {
            const result = await this.withRetries(() => this.deps.poller.poll(w, this.signal), keyOf(w));
            summary.polled++;
            summary.emitted += result.emitted;
            this.deps.onPolled?.(w, { result });
          } catch (error) {
            if (isAbortError(error)) return;
            this.deps.onPolled?.(w, { error });
            const action = classifyPollFailure(error, w.log, this.authFailures);
            this.applyFailure(w, action, error);
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
        this.deps.logger.warn({ what, attempt, err: describeError(error), requestId: (error as { requestId?: string }).requestId }, 'poll failed; retrying');
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
      if (this.pausedUntil > now && this.pausedForCredential && this.deps.credentialChanged?.()) {
        this.deps.logger.info('the key file changed; resuming polls with the new key');
        this.pausedUntil = 0;
      }
      if (this.pausedUntil > now) {
        // A rejected key may be replaced any moment; look at the key file every second meanwhile.
        wakeAt = this.pausedForCredential ? Math.min(this.pausedUntil, now + 1_000) : this.pausedUntil;
      } else {
        if (this.nextDiscoveryAt !== undefined && this.nextDiscoveryAt <= now && !this.inFlight.has('discovery')) {
          this.launchDiscovery();
        }
        for (const w of this.activeLogs()) {
          const key = keyOf(w);
          if (this.inFlight.has(key)) continue;
          const due = this.nextPollAt.get(key) ?? now;
          if (due <= now && this.queue.size === 0) this.launchPoll(w);
          else wakeAt = Math.min(wakeAt, Math.max(due, now + 50));
        }
        if (this.nextDiscoveryAt !== undefined) wakeAt = Math.min(wakeAt, Math.max(this.nextDiscoveryAt, now + 50));
      }
      this.wake = new AbortController();
      try {
        await clock.sleep(Math.max(0, wakeAt - now), AbortSignal.any([this.wake.signal, this.abort.signal]));
      } catch (error) {
        if (!isAbortError(error)) throw error;
      }
    }
  }

  private launchPoll(w: WatchedLog): void {
    const key = keyOf(w);
    this.inFlight.add(key);
    void this.queue
      .add(async () => {
        try {
          const result = await this.deps.poller.poll(w, this.signal);
          this.authFailures = 0;
          this.nextPollAt.set(key, this.deps.clock.now() + this.deps.watch.pollIntervalSeconds * 1000);
          this.deps.onPolled?.(w, { result });
        } catch (error) {
          if (isAbortError(error) && this.stateValue !== 'running') return;
          this.deps.onPolled?.(w, { error });
          this.applyFailure(w, classifyPollFailure(error, w.log, this.authFailures), error);
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
            this.deps.logger.error({ err: describeError(error), requestId: (error as { requestId?: string }).requestId }, 'discovery failed; next attempt on schedule');
          }
        }
      })
      .finally(() => {
        this.inFlight.delete('discovery');
        this.nextDiscoveryAt = nextCronTime(this.deps.watch.discovery.schedule, this.deps.clock.now());
        this.wake?.abort();
      });
  }

  private applyFailure(w: WatchedLog, action: FailureAction, error: unknown): void {
    const { store, clock, logger } = this.deps;
    const now = clock.now();
    const key = keyOf(w);
    store.watchedLogs.recordFailure(w.log, w.objectId, describeError(error), now);
    const target = { log: w.log, objectId: w.objectId || undefined, requestId: (error as { requestId?: string }).requestId };
    switch (action.kind) {
      case 'retry': {
        const failures = (store.watchedLogs.get(w.log, w.objectId)?.consecutiveFailures ?? 1);
        this.nextPollAt.set(key, now + (action.budgetPause ? 0 : pollRetryDelayMs(failures)));
        logger.warn({ ...target, failures, err: action.reason }, 'poll failed; will retry with backoff');
        return;
      }
      case 'pauseAll':
        if (error instanceof Error && (error as { code?: string }).code === 'API_INVALID_CREDENTIAL') {
          if (this.deps.credentialChanged?.()) {
            logger.info({ ...target }, 'the key file changed since the rejected request; retrying with the new key now');
            this.nextPollAt.set(key, now);
            return;
          }
          this.authFailures++;
        }
        this.pausedForCredential = (error as { code?: string }).code === 'API_INVALID_CREDENTIAL';
        this.pausedUntil = Math.max(this.pausedUntil, now + action.pauseMs);
        logger.error({ ...target, pauseSeconds: Math.round(action.pauseMs / 1000) }, action.reason);
        return;
      case 'disableKind':
        for (const other of store.watchedLogs.list()) {
          if (other.log === w.log && other.status === 'active') store.watchedLogs.setStatus(other.log, other.objectId, 'disabled', action.reason);
        }
        logger.error({ log: w.log }, action.reason);
        return;
      case 'disableLog':
        store.watchedLogs.setStatus(w.log, w.objectId, action.status, action.reason);
        logger.warn(target, action.reason);
        return;
    }
  }
}

export function nextCronTime(expression: string, now: number): number {
  return new CronTime(expression, 'UTC').getNextDateFrom(new Date(now)).toMillis();
}
