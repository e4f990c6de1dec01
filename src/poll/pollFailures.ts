import { ApiProblemError, requestIdOf } from '../api/apiErrors.js';
import { describeError, errorCodeOf } from '../errors.js';
import type { WatchedLog } from '../store/storeRecords.js';
import { classifyPollFailure, pollRetryDelayMs, STORE_PAUSE_MS, type FailureAction } from './failurePolicy.js';
import { logKey } from '../logs.js';
import type { KeyPause } from '../schedule/nextAction.js';
import type { PollLoopDeps } from './pollLoop.js';

type PollFailuresDeps = Pick<PollLoopDeps, 'store' | 'logger' | 'credentialChanged'>;

const NO_BACKOFFS: ReadonlyMap<string, number> = new Map();

/**
 * What failed polls do to the poll loop: a per-log backoff before the next attempt, a pause of
 * every poll on the key (rejected key, expired trial), or no more polls of a log or a whole kind
 * (404, missing scope). The failure policy classifies; this applies, records and logs.
 */
export class PollFailures {
  /**
   * Per-log retry backoff after a failure: not polled again before this time. This map and the
   * next are made at a tenant's first failure: most tenants have none, and an empty Map holds
   * about 220 bytes.
   */
  private notBefore: Map<string, number> | undefined;
  /** Failed polls in a row per log (by key), since the last success. */
  private failuresInARow: Map<string, number> | undefined;
  private pausedUntil = 0;
  /** The pause is for a rejected key: it ends as soon as the key file holds another. */
  private pausedForCredential = false;
  /** The fingerprint of the key the pause is for (ApiProblemError.rejectedKey). */
  private rejectedKey: string | undefined;
  /** Rejected-key failures in a row, so each pause is longer than the last. */
  private authFailures = 0;
  /** A pause for a store that cannot be written was logged since the last successful poll. */
  private storePauseLogged = false;

  constructor(private readonly deps: PollFailuresDeps) {}

  /** The key-wide pause as the decision sees it (undefined when there is none): while it lasts no poll leaves. */
  pause(now: number): KeyPause | undefined {
    if (this.pausedUntil <= now) return undefined;
    const forCredential = this.pausedForCredential;
    const keyReplaced = forCredential && !!this.deps.credentialChanged?.(this.rejectedKey);
    return { until: this.pausedUntil, forCredential, keyReplaced };
  }

  /** Ends the key-wide pause (the rejected key was replaced). */
  endPause(): void {
    this.pausedUntil = 0;
  }

  backoffs(): ReadonlyMap<string, number> {
    return this.notBefore ?? NO_BACKOFFS;
  }

  succeeded(w: WatchedLog): void {
    this.notBefore?.delete(logKey(w));
    this.failuresInARow?.delete(logKey(w));
    this.authFailures = 0;
    this.storePauseLogged = false;
  }

  /** Classifies a failed poll, applies what it calls for and returns it. */
  async failed(w: WatchedLog, error: unknown, now: number): Promise<FailureAction> {
    const action = classifyPollFailure(error, w.log, this.authFailures);
    if (action.kind === 'storeBusy') {
      // Not the log's failure, and nothing to log per poll (changefeed_store_pool_busy_total
      // counts them): the tenant's polls give the pool a moment.
      this.pauseFor(now, action.pauseMs);
      return action;
    }
    const { store, logger } = this.deps;
    const key = logKey(w);
    // Counted here too: on a store that cannot be written the recorded count stays behind.
    const failures = (this.failuresInARow?.get(key) ?? w.consecutiveFailures) + 1;
    (this.failuresInARow ??= new Map()).set(key, failures);
    try {
      await store.watchedLogs.recordFailure(w.log, w.objectId, describeError(error), now);
    } catch (recordError) {
      // The failure cannot be recorded (a full disk, a locked file, a database away): what it
      // decides still holds, and every poll waits for the store as for STORE_UNAVAILABLE.
      this.storeRefused(recordError, now);
    }
    const target = { log: w.log, objectId: w.objectId || undefined, requestId: requestIdOf(error) };
    switch (action.kind) {
      case 'retry': {
        (this.notBefore ??= new Map()).set(key, now + (action.budgetPause ? 0 : pollRetryDelayMs(failures)));
        logger.warn({ ...target, failures, err: action.reason }, 'poll failed; will retry with backoff');
        return action;
      }
      case 'pauseAll':
        if (errorCodeOf(error) === 'API_INVALID_CREDENTIAL') {
          const rejected = error instanceof ApiProblemError ? error.rejectedKey : undefined;
          if (this.deps.credentialChanged?.(rejected)) {
            logger.info(target, 'the key file changed since the rejected request; retrying with the new key now');
            (this.notBefore ??= new Map()).set(key, now);
            return action;
          }
          this.authFailures++;
          this.rejectedKey = rejected;
        }
        this.pausedForCredential = errorCodeOf(error) === 'API_INVALID_CREDENTIAL';
        this.pausedUntil = Math.max(this.pausedUntil, now + action.pauseMs);
        if (errorCodeOf(error) === 'STORE_UNAVAILABLE') {
          // Every poll after each 5 s pause meets the same store: logged once until a poll succeeds.
          if (!this.storePauseLogged)
            logger.warn({ ...target, pauseSeconds: Math.round(action.pauseMs / 1000) }, action.reason);
          this.storePauseLogged = true;
          return action;
        }
        logger.error({ ...target, pauseSeconds: Math.round(action.pauseMs / 1000) }, action.reason);
        return action;
      case 'disableKind':
        try {
          for (const other of await store.watchedLogs.list()) {
            if (other.log === w.log && other.status === 'active')
              await store.watchedLogs.setStatus(other.log, other.objectId, 'disabled', action.reason);
          }
        } catch (writeError) {
          // Not disabled yet: the pause ends with the same answer, and this write is tried again.
          this.storeRefused(writeError, now);
          return action;
        }
        logger.error({ log: w.log }, action.reason);
        return action;
      case 'disableLog':
        try {
          await store.watchedLogs.setStatus(w.log, w.objectId, action.status, action.reason);
        } catch (writeError) {
          this.storeRefused(writeError, now);
          return action;
        }
        logger.warn(target, action.reason);
        return action;
    }
  }

  /**
   * A write of a failure's outcome the store refused: every poll waits (pauseForStore), so the log
   * is not polled again at once. Anything else (LEASE_LOST, an error nobody expected) is thrown to
   * the poll's launch site.
   */
  private storeRefused(error: unknown, now: number): void {
    const { store } = this.deps;
    if (!store.health.record(error, store.location)) throw error;
    this.pauseForStore(now);
  }

  /** Every poll on the key waits as for STORE_UNAVAILABLE: nothing read now could be kept. */
  pauseForStore(now: number): void {
    this.pauseFor(now, STORE_PAUSE_MS);
  }

  /** Every poll on the key waits `ms` (a longer pause already running is kept). */
  pauseFor(now: number, ms: number): void {
    if (now + ms <= this.pausedUntil) return;
    this.pausedUntil = now + ms;
    this.pausedForCredential = false;
  }
}
