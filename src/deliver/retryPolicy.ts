import { backoffDelayMs } from '../backoff.js';
import { MAX_RETRY_AFTER_MS } from '../retryAfter.js';
import type { RetryConfig } from '../sinkContract/deliveryConfig.js';

/**
 * Delay before attempt `attempt + 1` after `attempt` failures: exponential backoff with full jitter
 * (uniform in [0, min(max, initial * 2^(attempt-1))]), which spreads retries of many events
 * instead of sending them in waves. A destination's Retry-After is a floor, capped at one hour.
 */
export function retryDelayMs(
  attempt: number,
  config: RetryConfig,
  retryAfterMs?: number,
  random: () => number = Math.random,
): number {
  const jittered = backoffDelayMs(attempt, { initialMs: config.initialDelayMs, maxMs: config.maxDelayMs }, random);
  return retryAfterMs === undefined ? jittered : Math.max(jittered, Math.min(retryAfterMs, MAX_RETRY_AFTER_MS));
}

/** True when an event that has failed `attempts` times, first tried at `firstAttemptAt`, is out of chances. */
export function isExhausted(attempts: number, firstAttemptAt: number, now: number, config: RetryConfig): boolean {
  if (config.maxAttempts > 0 && attempts >= config.maxAttempts) return true;
  return config.maxAgeSeconds > 0 && now - firstAttemptAt >= config.maxAgeSeconds * 1000;
}
