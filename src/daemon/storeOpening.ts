import { getMaxListeners, setMaxListeners } from 'node:events';
import type { Logger } from 'pino';
import { backoffDelayMs, type BackoffPolicy } from '../backoff.js';
import type { Clock } from '../clock.js';
import { AbortedError, describeError, errorCodeOf } from '../errors.js';
import { waitWithin } from '../sinks/deadline.js';
import type { StoreBackend } from '../store/storeBackend.js';
import { isStorageError, StoreHealth } from '../store/storeHealth.js';

/**
 * Waits between attempts: 0.5 to 1 s after the first failure, the ceiling doubling to 30 s. A
 * database restarting comes back within seconds and is found then; one down for long costs an
 * attempt per 15 s on average per replica, not a storm when it returns (full jitter).
 */
export const STORE_OPEN_RETRY: BackoffPolicy = { initialMs: 1_000, maxMs: 30_000, minMs: 500 };

export interface StoreOpeningOptions {
  /** One attempt: STORE_UNAVAILABLE (the database is down or out of reach) is retried, anything else thrown. */
  open: () => Promise<StoreBackend>;
  /** Paces the retries and says how long until the next. */
  clock: Clock;
  logger: Logger;
  /** Where the store is, without its password, for the log lines. */
  location: string;
  random?: () => number;
}

/**
 * Opening the store at the start of `run`. A PostgreSQL down at start is waited for, rather than
 * ending the process (its supervisor would restart it over and over, each a cold start): /readyz
 * names the problem and the attempts back off. What waiting cannot fix (credentials, a missing
 * database, a newer schema) is thrown at once. `abort` (a stop) ends the wait at once, and a late
 * attempt's store is closed, not leaked.
 */
export class StoreOpening {
  private readonly stopController = new AbortController();
  private failure: { attempts: number; message: string; retryAt: number } | undefined;

  constructor(private readonly options: StoreOpeningOptions) {}

  /** Why the store is not open yet, for /readyz; undefined before the first failure. */
  get problem(): string | undefined {
    if (!this.failure) return undefined;
    const { attempts, message, retryAt } = this.failure;
    const seconds = Math.max(0, Math.ceil((retryAt - this.options.clock.now()) / 1000));
    return `${message}; retrying in ${seconds} s (after attempt ${attempts})`;
  }

  /** The open store; AbortedError once aborted; the first error that waiting cannot fix. */
  async open(): Promise<StoreBackend> {
    const { clock, logger } = this.options;
    const signal = this.stopController.signal;
    for (let attempt = 1; ; attempt++) {
      const attempted = this.options.open();
      let retryAt: number;
      try {
        const backend = await waitWithin(attempted, { what: 'opening the store', signal });
        // Opened just as the stop came: closed below, as an attempt that ends after the stop is.
        if (signal.aborted) throw new AbortedError();
        if (this.failure)
          logger.info({ store: this.options.location, attempts: attempt }, 'the store answered; opened it');
        this.failure = undefined;
        return backend;
      } catch (error) {
        if (signal.aborted) {
          // The attempt may still succeed: its connections must not outlive the stop.
          attempted.then((backend) => backend.close()).catch(() => undefined);
          throw new AbortedError('stopped while waiting for the store');
        }
        if (errorCodeOf(error) !== 'STORE_UNAVAILABLE') throw error;
        const waitMs = backoffDelayMs(attempt, STORE_OPEN_RETRY, this.options.random);
        const message = (error as Error).message;
        retryAt = clock.now() + waitMs;
        this.failure = { attempts: attempt, message, retryAt };
        logger.warn(
          { store: this.options.location, attempt, retryInMs: waitMs, err: describeError(error) },
          `the store cannot be opened yet; retrying in ${Math.ceil(waitMs / 1000)} s (not ready until it opens)`,
        );
      }
      await clock.sleep(retryAt - clock.now(), signal);
    }
  }

  /** Ends the wait (a stop): `open` rejects with AbortedError at once. */
  abort(): void {
    this.stopController.abort();
  }
}

export interface StoreRefusalWaitOptions<T> {
  /** One try; a storage error (isStorageError: a full disk, a store locked or read-only) is tried again. */
  attempt: () => Promise<T>;
  clock: Clock;
  logger: Logger;
  /** Where the store is, without its password, for the phrasing of the refusal. */
  location: string;
  /** Aborted by a stop: the wait ends at once with AbortedError. */
  signal: AbortSignal;
  /**
   * Why the store refuses while it does (phrased as StoreHealth phrases it), then undefined once a
   * later try gets past it (succeeds, or fails for another reason).
   */
  onRefusal: (problem: string | undefined) => void;
  random?: () => number;
}

/**
 * `attempt` again, backing off as a store that cannot be opened is (STORE_OPEN_RETRY), while the
 * store refuses it: for a reload going back to the configuration that ran a moment ago, which a
 * full disk must pause, as it pauses that configuration running, rather than end the process.
 * Anything else the attempt throws is thrown.
 */
export async function whileStoreRefuses<T>(options: StoreRefusalWaitOptions<T>): Promise<T> {
  const { clock, logger, signal } = options;
  for (let attempt = 1; ; attempt++) {
    try {
      const result = await options.attempt();
      options.onRefusal(undefined);
      return result;
    } catch (error) {
      if (!isStorageError(error)) {
        // The store took this try, which failed further on (a tenant's sink file, its feed
        // tokens): the refusal reported before is over. Left, a tenant of the directory whose
        // start so failed kept /readyz naming a full disk long after space returned.
        if (attempt > 1) options.onRefusal(undefined);
        throw error;
      }
      if (signal.aborted) throw new AbortedError('stopped while waiting for the store');
      const health = new StoreHealth();
      health.record(error, options.location);
      const problem = health.problem ?? (error as Error).message;
      options.onRefusal(problem);
      const waitMs = backoffDelayMs(attempt, STORE_OPEN_RETRY, options.random);
      logger.warn(
        { store: options.location, attempt, retryInMs: waitMs, err: describeError(error) },
        `${problem}; starting again in ${Math.ceil(waitMs / 1000)} s (not ready until the store takes it)`,
      );
      // One listener on the daemon's stop signal per wait, and every tenant of a directory whose
      // start the store refuses waits at once: past 10, Node printed "Possible EventTarget memory
      // leak detected" beside the JSON log. Counted in for the wait, out after it.
      setMaxListeners(getMaxListeners(signal) + 1, signal);
      try {
        await clock.sleep(waitMs, signal);
      } finally {
        setMaxListeners(Math.max(0, getMaxListeners(signal) - 1), signal);
      }
    }
  }
}
