import type { HttpConfig, MountedRoutes } from '../observe/healthServer.js';
import { startHealthServer, type HealthServer, type ReadinessCheck } from '../observe/healthServer.js';
import type { ProcessMetrics } from '../observe/processMetrics.js';
import type { TenantSupervisor } from './tenantSupervisor.js';

export interface ProcessHealthSource {
  /** The tenants' supervisor, once the store is open; none while the daemon waits for it. */
  supervisor: () => TenantSupervisor | undefined;
  stopped: () => boolean;
  readiness: () => ReadinessCheck[];
  /** The process's metrics, which outlive this daemon (a reload keeps them). */
  metrics: ProcessMetrics;
  /** Served on the same listener under its own paths: the operator console, when enabled. */
  mounted?: MountedRoutes | undefined;
}

/**
 * The process's /healthz, /readyz and /metrics (the tenant feeds have their own listener,
 * tenantFeeds.ts, so tenant names appear only here, where the operator binds it). Everything is read at request
 * time, so the server can answer before the store is open (a PostgreSQL down at start): alive,
 * not ready, no tenant metrics yet.
 */
export function serveProcessHealth(config: HttpConfig, source: ProcessHealthSource): Promise<HealthServer> {
  const runtimes = () => source.supervisor()?.runtimes ?? [];
  source.metrics.watch({
    running: () => runtimes().length,
    failed: () => source.supervisor()?.startFailures.size ?? 0,
  });
  return startHealthServer(
    config,
    {
      alive: () => !source.stopped() && runtimes().every((r) => r.alive),
      readiness: source.readiness,
      metrics: source.metrics,
    },
    source.mounted,
  );
}
