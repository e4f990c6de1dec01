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
/**
 * Connections of one pool at most: when the service answers slowly, the requests of all tenants
 * wait together, and without a cap each holds a socket. Requests beyond this wait in the pool's
 * queue, their timeout running. 512 connections carry 1,250 requests a second (5,000 tenants at
 * 900 reads an hour) up to 400 ms per request.
 */
const MAX_CONNECTIONS = 512;
const pools = new Map<string, SharedPool>();

/**
 * One connection pool per service origin (and timeout and CA) for the whole process, shared by
 * every tenant's client: a pool per tenant costs each its queue, connections and idle sockets;
 * shared, the sockets follow the requests in flight of all tenants together.
 */
export function acquireServicePool(origin: string, settings: ServicePoolSettings): ServicePoolLease {
  const key = JSON.stringify([origin, settings.timeoutMs, settings.ca ?? null]);
  let shared = pools.get(key);
  if (shared === undefined) {
    shared = {
      pool: new Pool(origin, {
        connections: MAX_CONNECTIONS,
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
