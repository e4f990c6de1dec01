import type pg from 'pg';

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
  await settle(pool.end(), new AbortController().signal, 5_000, undefined).catch(() => undefined);
}

/**
 * `promise`, or a rejection after `timeoutMs` or on abort. A connection given as `lease` is
 * destroyed then: the server rolls back what it was doing, and no later query queues behind it.
 */
export function settle<T>(
  promise: Promise<T>,
  signal: AbortSignal,
  timeoutMs: number,
  lease: Lease | undefined,
): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const cut = new Promise<never>((_, reject) => {
    const fail = (error: Error) => {
      lease?.release(error);
      reject(error);
    };
    timer = setTimeout(() => fail(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    onAbort = () => fail(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  promise.catch(() => undefined);
  return Promise.race([promise, cut]).finally(() => {
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort as () => void);
  });
}
