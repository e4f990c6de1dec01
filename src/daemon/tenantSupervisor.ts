import { systemClock } from '../clock.js';
import type { AppConfig } from '../config/appConfigSchema.js';
import { RequeueWatch } from '../deliver/requeueWatch.js';
import type { TenantConfig } from '../config/tenantConfigSchema.js';
import type { ProcessMetrics } from '../observe/processMetrics.js';
import { describeError } from '../errors.js';
import type { WriteFence } from '../cluster/writeFence.js';
import type { StoreBackend } from '../store/storeBackend.js';
import type { Tenant } from '../tenants/tenant.js';
import type { DaemonOptions, TenantOptions } from './daemonParts.js';
import { DEFAULT_SHUTDOWN_TIMEOUT_MS, drainWithinMs } from './drainDeadline.js';
import { TenantRuntime } from './tenantRuntime.js';

export interface TenantSupervisorDeps {
  backend: StoreBackend;
  options: DaemonOptions & { metrics: ProcessMetrics };
  /** The whole config of a tenant: the process-wide sections with the tenant's over them. */
  configOf: (tenant: Tenant<TenantConfig>) => AppConfig;
  /** On a shared store: the fence of the lease under which the tenant is started. */
  fenceOf?: (tenant: string) => WriteFence | undefined;
  /**
   * On a shared store: what the tenant's service client calls before each request, and its sink
   * workers before each write (LeaseKeeper.requestGuard).
   */
  requestGuardOf?: (tenant: string) => ((refused?: string) => void) | undefined;
  /** On a shared store: the lease length, which bounds how long a stopping tenant drains (drainWithinMs). */
  leaseMs?: number | undefined;
}

/**
 * The tenants running in this process, each in its own TenantRuntime: started, stopped (which
 * drains its in-flight deliveries) and restarted with a new config, one operation at a time per
 * tenant. A tenant that fails to start is reported and left out; it never stops another.
 */
export class TenantSupervisor {
  private readonly running = new Map<string, TenantRuntime>();
  private readonly failures = new Map<string, string>();
  /** Runtimes built by `prepare` and not started yet: `start` starts them as they are. */
  private readonly prepared = new Set<string>();
  /** Per tenant, the tail of its start/stop operations, so they never interleave. */
  private readonly queues = new Map<string, Promise<void>>();
  /** Runtimes stopping now, so that an abort can cut their drain short. */
  private readonly stopping = new Map<string, TenantRuntime>();

  private readonly drainMs: number;
  /** The daemon's options, with the re-queue watch all the tenants' engines share. */
  private readonly tenantOptions: TenantOptions;

  constructor(private readonly deps: TenantSupervisorDeps) {
    const shutdownTimeoutMs = deps.options.shutdownTimeoutMs ?? DEFAULT_SHUTDOWN_TIMEOUT_MS;
    this.drainMs = drainWithinMs({ shutdownTimeoutMs, leaseMs: deps.leaseMs });
    const requeues = new RequeueWatch(deps.options.clock ?? systemClock, deps.options.logger);
    this.tenantOptions = { ...deps.options, requeues };
  }

  get runtimes(): TenantRuntime[] {
    return [...this.running.values()];
  }

  runtime(name: string): TenantRuntime | undefined {
    return this.running.get(name);
  }

  /** Tenants whose last start failed, with why. */
  get startFailures(): ReadonlyMap<string, string> {
    return this.failures;
  }

  /**
   * Starts the tenant (stopping the one running under its name first, to take a new config). A
   * failure is reported and kept out of the way of the other tenants; `rethrow` also throws it
   * (the only tenant of a daemon without tenants, whose failed start fails the daemon's).
   */
  start(tenant: Tenant<TenantConfig>, options: { rethrow?: boolean } = {}): Promise<void> {
    return this.serially(tenant.name, async () => {
      const adopted = this.prepared.delete(tenant.name) ? this.running.get(tenant.name) : undefined;
      if (!adopted) await this.stopNow(tenant.name, this.drainMs);
      let runtime = adopted;
      try {
        runtime ??= await this.prepare(tenant);
        await runtime.start();
        this.failures.delete(tenant.name);
      } catch (error) {
        await this.startFailed(tenant, runtime, error);
        if (options.rethrow) throw error;
      }
    });
  }

  /**
   * Stops the tenant: polling stops, in-flight deliveries finish within `drainMs`, sinks close.
   * `abort` (a lost lease) aborts its deliveries in flight at once instead, also those of a
   * drain already under way.
   */
  stop(name: string, options: { abort?: boolean } = {}): Promise<void> {
    if (options.abort) (this.stopping.get(name) ?? this.running.get(name))?.cutShort();
    return this.serially(name, () => this.stopNow(name, options.abort ? 0 : this.drainMs));
  }

  /** Stops every tenant, each draining as `stop` does, including those whose start is under way. */
  async stopAll(): Promise<void> {
    await Promise.all([...new Set([...this.running.keys(), ...this.queues.keys()])].map((name) => this.stop(name)));
    // A check under way reads the store, which the daemon closes next.
    await this.tenantOptions.requeues?.stopped();
  }

  /**
   * Opens a tenant's store and builds its runtime without starting it: for `run --once`, and so
   * that a bad store or config fails before anything starts; `start` then starts it as it is.
   */
  async prepare(tenant: Tenant<TenantConfig>): Promise<TenantRuntime> {
    const fence = this.deps.fenceOf?.(tenant.name);
    const requestGuard = this.deps.requestGuardOf?.(tenant.name);
    const store = await this.deps.backend.tenantStore(tenant.name, fence ? { fence } : {});
    const config = this.deps.configOf(tenant);
    const runtime = new TenantRuntime(tenant.name, config, store, this.tenantOptions, requestGuard);
    this.running.set(tenant.name, runtime);
    this.prepared.add(tenant.name);
    return runtime;
  }

  private async startFailed(
    tenant: Tenant<TenantConfig>,
    runtime: TenantRuntime | undefined,
    error: unknown,
  ): Promise<void> {
    const problem = describeError(error);
    this.failures.set(tenant.name, problem);
    this.running.delete(tenant.name);
    await runtime?.stop({ drainMs: 0 }).catch(() => undefined);
    this.deps.options.logger.error(
      { tenant: tenant.name, file: tenant.file, err: problem },
      'tenant did not start; the other tenants go on',
    );
  }

  private async stopNow(name: string, drainMs: number): Promise<void> {
    const runtime = this.running.get(name);
    this.running.delete(name);
    this.prepared.delete(name);
    this.failures.delete(name);
    if (!runtime) return;
    this.stopping.set(name, runtime);
    try {
      await runtime.stop({ drainMs });
    } finally {
      this.stopping.delete(name);
    }
  }

  private serially(name: string, operation: () => Promise<void>): Promise<void> {
    const next = (this.queues.get(name) ?? Promise.resolve()).then(operation);
    const tail = next.catch(() => undefined);
    this.queues.set(name, tail);
    tail
      .then(() => {
        if (this.queues.get(name) === tail) this.queues.delete(name);
      })
      .catch(() => undefined);
    return next;
  }
}
