/** `run --shutdown-timeout` by default: how long a SIGTERM leaves `stop()` before the process exits 1. */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 20_000;

/**
 * How long a tenant stopped gracefully (handed over, its file changed or removed, the process
 * stopping) lets its deliveries in flight finish before it aborts them; their events then stay
 * pending for the next start or holder. Half the shutdown timeout, so that releasing the leases
 * and closing the store still fit in it. On a shared store (`leaseMs`) also at most half the
 * lease: the keeper renews the lease while the tenant drains, so the drained writes' acks commit
 * under it, and a drain never keeps a tenant from its next holder for long. Should the renewals
 * fail meanwhile, the lease is lost at its local deadline and the drain is cut short at once.
 */
export function drainWithinMs(settings: { shutdownTimeoutMs: number; leaseMs?: number | undefined }): number {
  const bySignal = Math.max(0, settings.shutdownTimeoutMs) / 2;
  return settings.leaseMs === undefined ? bySignal : Math.min(bySignal, settings.leaseMs / 2);
}
