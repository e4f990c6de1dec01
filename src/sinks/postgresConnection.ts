import type pg from 'pg';
import { AbortedError } from '../errors.js';
import { settleWithin, waitWithin } from './deadline.js';

/** A pooled connection, given back once: a timed-out query destroys it before the write's own cleanup runs. */
export class Lease {
  private released = false;
  /** A connection lost between queries emits here; the next query fails and says so. */
  private readonly ignore = () => undefined;

  constructor(readonly client: pg.PoolClient) {
    client.on('error', this.ignore);
  }

  /** Back to the pool, or closed when `destroy` (a connection in an unknown state). */
  release(destroy: boolean | Error): void {
    if (this.released) return;
    this.released = true;
    this.client.off('error', this.ignore);
    this.client.release(destroy === false ? undefined : destroy);
  }
}

/** Ends the pool without waiting more than a few seconds for connections that went silent. */
export async function endPool(pool: pg.Pool): Promise<void> {
  await settleWithin(pool.end(), { timeoutMs: 5_000 }).catch(() => undefined);
}

/**
 * `promise` bounded by `timeoutMs` and the signal (an AbortedError naming `what` on abort). A
 * connection given as `lease` is destroyed when the wait is given up: the server rolls back what
 * it was doing, and no later query queues behind it. A query that failed on its own leaves it be.
 */
export async function boundedQuery<T>(
  promise: Promise<T>,
  limits: { what: string; signal: AbortSignal; timeoutMs: number },
  lease?: Lease,
): Promise<T> {
  const timedOut = new Error(`no answer within ${limits.timeoutMs} ms`);
  try {
    return await waitWithin(promise, { ...limits, onTimeout: () => timedOut });
  } catch (error) {
    if (error === timedOut || error instanceof AbortedError) lease?.release(error as Error);
    throw error;
  }
}
