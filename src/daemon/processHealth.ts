import type { HttpConfig } from '../observe/healthServer.js';
import { startHealthServer, type HealthServer, type ReadinessCheck } from '../observe/healthServer.js';
import { ProcessMetrics } from '../observe/processMetrics.js';
import { routeTenantFeeds, type TenantsElsewhere } from './tenantFeeds.js';
import type { TenantSupervisor } from './tenantSupervisor.js';

export interface ProcessHealthSource {
  /** The tenants' supervisor, once the store is open; none while the daemon waits for it. */
  supervisor: () => TenantSupervisor | undefined;
  stopped: () => boolean;
  readiness: () => ReadinessCheck[];
  /** On a store shared by replicas with the feed on, once the store is open: tenants held elsewhere. */
  elsewhere?: () => TenantsElsewhere | undefined;
}

/**
 * The process's /healthz, /readyz, /metrics and tenant feeds. Everything is read at request
 * time, so the server can answer before the store is open (a PostgreSQL down at start): alive,
 * not ready, no tenant metrics yet.
 */
export function serveProcessHealth(config: HttpConfig, source: ProcessHealthSource): Promise<HealthServer> {
  const runtimes = () => source.supervisor()?.runtimes ?? [];
  const metrics = new ProcessMetrics(() => runtimes().map((r) => r.metrics.registry), {
    running: () => runtimes().length,
    failed: () => source.supervisor()?.startFailures.size ?? 0,
  });
  return startHealthServer(config, {
    alive: () => !source.stopped() && runtimes().every((r) => r.alive),
    readiness: source.readiness,
    metrics,
    routes: (req, res) =>
      routeTenantFeeds(req, res, (name) => source.supervisor()?.runtime(name)?.feed, source.elsewhere?.()),
  });
}
