import { Pool } from 'undici';

/** What a pool is set up with besides its origin: clients that differ in these cannot share one. */
export interface ServicePoolSettings {
  /** Headers and body timeout of every request. */
  timeoutMs: number;
  /** PEM of the CAs to trust for https (api.caFile); the public CAs when absent. */
  ca?: string;
}

/** A hold on a shared pool; `release` once the client is done with it. */
export interface ServicePoolLease {
  readonly pool: Pool;
  /** Drops this hold (idempotent); the last one closes the pool, letting its requests in flight finish. */
  release(): Promise<void>;
}

interface SharedPool {
  pool: Pool;
  holders: number;
}

const KEEP_ALIVE_MS = 30_000;
const pools = new Map<string, SharedPool>();

/**
 * One connection pool per service origin (and timeout and CA) for the whole process, shared by
 * every tenant's client. A pool of its own per tenant cost each tenant its request queue (16 KB),
 * its connection objects and a socket or two kept alive between its polls, about 30 KB of heap
 * and the sockets' native memory per tenant; shared, the sockets follow the requests in flight
 * of all tenants together. The pool sets no cap on connections: each tenant's read budget paces
 * its own requests, and a cap shared by all would let one slow company's requests queue every
 * other tenant's behind them.
 */
export function acquireServicePool(origin: string, settings: ServicePoolSettings): ServicePoolLease {
  const key = JSON.stringify([origin, settings.timeoutMs, settings.ca ?? null]);
  let shared = pools.get(key);
  if (shared === undefined) {
    shared = {
      pool: new Pool(origin, {
        keepAliveTimeout: KEEP_ALIVE_MS,
        headersTimeout: settings.timeoutMs,
        bodyTimeout: settings.timeoutMs,
        ...(settings.ca ? { connect: { ca: settings.ca } } : {}),
      }),
      holders: 0,
    };
    pools.set(key, shared);
  }
  shared.holders++;
  const held = shared;
  let releasing: Promise<void> | undefined;
  const release = async (): Promise<void> => {
    held.holders--;
    if (held.holders > 0) return;
    // Gone from the map at once: a client created while this one closes gets a fresh pool.
    if (pools.get(key) === held) pools.delete(key);
    await held.pool.close();
  };
  return {
    pool: held.pool,
    release: () => (releasing ??= release()),
  };
}
