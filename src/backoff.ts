/**
 * The one backoff of the daemon: exponential with full jitter, capped. Delivery retries, failed
 * polls, discovery retries, key pauses and sink reconnects all wait by it, each with its own
 * policy, so many waiters spread out instead of retrying in waves (full jitter: uniform in
 * [floor, min(max, initial * 2^(attempt - 1))]).
 */
export interface BackoffPolicy {
  /** Ceiling of the first wait. */
  readonly initialMs: number;
  /** Largest ceiling; each attempt doubles the ceiling up to it. */
  readonly maxMs: number;
  /** Shortest wait, so the jitter cannot make a retry immediate. Default 0. */
  readonly minMs?: number;
  /**
   * `full` (the default) spreads many waiters; `none` waits the whole ceiling, for a wait that is
   * one of a kind and that an operator reads in a log line (a key-wide pause).
   */
  readonly jitter?: 'full' | 'none';
}

/** Wait before trying again after `attempt` failures in a row (attempt 1: the first failure). */
export function backoffDelayMs(attempt: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxMs, policy.initialMs * 2 ** Math.max(0, attempt - 1));
  const wait = policy.jitter === 'none' ? ceiling : Math.floor(random() * ceiling);
  return Math.max(policy.minMs ?? 0, wait);
}
