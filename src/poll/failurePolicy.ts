import { ApiError, ApiProblemError } from '../api/apiErrors.js';
import { backoffDelayMs, type BackoffPolicy } from '../backoff.js';
import { ChangefeedError } from '../errors.js';
import { formatFieldErrors } from '../api/problemDetails.js';
import { LOGS, type LogKind } from '../logs.js';

/**
 * What a failed poll means for the poller, decided from the error's code alone.
 * - `retry`: the same log again after a backoff (5xx, timeouts, malformed bodies, 429).
 * - `storeBusy`: the store's connections are all in use (back-pressure): every poll on this key
 *   waits a moment, nothing is recorded (a write would queue on the same connections).
 * - `pauseAll`: every poll on this key waits (rejected credential, expired trial).
 * - `disableKind`: the key lacks the scope for this kind of log; other logs go on.
 * - `disableLog`: this one log is dropped until restart (404 gone, 403 permissions, 400 invalid).
 */
export type FailureAction =
  | { kind: 'retry'; reason: string; budgetPause: boolean }
  | { kind: 'storeBusy'; reason: string; pauseMs: number }
  | { kind: 'pauseAll'; reason: string; pauseMs: number }
  | { kind: 'disableKind'; reason: string }
  | { kind: 'disableLog'; status: 'gone' | 'disabled'; reason: string };

const MINUTE = 60_000;
/** How long every poll waits for a store that refused a write before one is tried again. */
export const STORE_PAUSE_MS = 5_000;
/** How long every poll waits after the store's pool stayed full (STORE_BUSY): back-pressure, not an outage. */
export const STORE_BUSY_PAUSE_MS = 1_000;
/** Pauses of a rejected key: 1, 2, 4, 8, then 15 minutes; one per key, so no jitter. */
const CREDENTIAL_PAUSE: BackoffPolicy = { initialMs: MINUTE, maxMs: 15 * MINUTE, jitter: 'none' };

export function classifyPollFailure(error: unknown, log: LogKind, consecutiveAuthFailures: number): FailureAction {
  if (!(error instanceof ApiError)) {
    const code = error instanceof ChangefeedError ? error.code : undefined;
    const reason = error instanceof Error ? error.message : String(error);
    // The key file is missing or empty: nothing can be read until it is fixed.
    if (code === 'CONFIG_INVALID') return { kind: 'pauseAll', reason, pauseMs: MINUTE };
    // A full or read-only disk: nothing read could be kept. Try again soon; the space may return.
    if (code === 'STORE_UNAVAILABLE') return { kind: 'pauseAll', reason, pauseMs: STORE_PAUSE_MS };
    if (code === 'STORE_BUSY') return { kind: 'storeBusy', reason, pauseMs: STORE_BUSY_PAUSE_MS };
    // Retrying cannot make a window sparser, a version log shorter or its entries smaller, and
    // each try costs reads (up to 51, 51 and 72).
    if (code === 'WINDOW_TOO_DENSE' || code === 'VERSION_LOG_TOO_LONG' || code === 'OVERSIZED_ENTRIES')
      return { kind: 'disableLog', status: 'disabled', reason: `${reason}; not retried until restart` };
    return { kind: 'retry', reason, budgetPause: false };
  }
  switch (error.code) {
    case 'API_INVALID_CREDENTIAL':
      // Slow, growing retries: the key may be rotated back in, but a hot loop helps nobody.
      return {
        kind: 'pauseAll',
        reason: error.message,
        pauseMs: backoffDelayMs(consecutiveAuthFailures + 1, CREDENTIAL_PAUSE),
      };
    case 'API_TRIAL_EXPIRED':
      return { kind: 'pauseAll', reason: error.message, pauseMs: 60 * MINUTE };
    case 'API_INSUFFICIENT_SCOPE':
      return {
        kind: 'disableKind',
        reason: `the API key lacks the scope ${LOGS[log].scope} needed for the ${log} log; grant it and restart`,
      };
    case 'API_INSUFFICIENT_PERMISSIONS':
      return { kind: 'disableLog', status: 'disabled', reason: error.message };
    case 'API_NOT_FOUND':
      // The company-wide log cannot be deleted: a 404 there means a wrong base URL or a proxy
      // in the way, which a restart with a fixed config should retry.
      if (log === 'identity_provider') {
        return {
          kind: 'disableLog',
          status: 'disabled',
          reason: `${error.path} answered 404: check api.baseUrl (the company-wide log cannot have been deleted); retried after restart`,
        };
      }
      return {
        kind: 'disableLog',
        status: 'gone',
        reason: `${error.path} answered 404: the object was deleted or is not visible to this key; no longer watched`,
      };
    case 'API_VALIDATION': {
      const fields = error instanceof ApiProblemError ? formatFieldErrors(error.problem) : '';
      return {
        kind: 'disableLog',
        status: 'disabled',
        reason: `the service rejected the poll request as invalid (${fields || error.message}); not repeated until restart`,
      };
    }
    case 'API_RATE_LIMITED':
      return { kind: 'retry', reason: error.message, budgetPause: true };
    default:
      return { kind: 'retry', reason: error.message, budgetPause: false };
  }
}

/** `run --once` tries a log, or discovery, this many times before it reports the failure. */
export const ONCE_ATTEMPTS = 6;

/**
 * What `run --once` makes of a failed attempt (`attempt` counts from 1): `retry` after the
 * backoff while the failure is transient and attempts are left; `handled` for an object that was
 * deleted (no longer watching it is the answer, not a failed sweep); `report` otherwise.
 */
export function onceAfterFailure(action: FailureAction, attempt: number): 'retry' | 'handled' | 'report' {
  if (action.kind === 'disableLog' && action.status === 'gone') return 'handled';
  return (action.kind === 'retry' || action.kind === 'storeBusy') && attempt < ONCE_ATTEMPTS ? 'retry' : 'report';
}

/** Backoff of a log whose polls keep failing: ceilings from 5 s to 5 min, never under 1 s. */
export const POLL_RETRY_BACKOFF: BackoffPolicy = { initialMs: 5_000, maxMs: 300_000, minMs: 1_000 };

export function pollRetryDelayMs(consecutiveFailures: number, random: () => number = Math.random): number {
  return backoffDelayMs(consecutiveFailures, POLL_RETRY_BACKOFF, random);
}
