import type pg from 'pg';
import type { Logger } from 'pino';
import { LeaseKeeper } from '../cluster/leaseKeeper.js';
import { LeaseTable } from '../cluster/leaseTable.js';
import type { TenantConfig } from '../config/tenantConfigSchema.js';
import { describeError } from '../errors.js';
import type { WriteFence } from '../store/storeBackend.js';
import type { Tenant } from '../tenants/tenant.js';
import type { TenantSupervisor } from './tenantSupervisor.js';

export interface TenantLeasesDeps {
  /** The PostgreSQL store's lease pool: the lease rows live beside the tenants' data, but their
   * queries never wait behind the tenants' (PostgresStoreBackend.leasePool). */
  pool: pg.Pool;
  instanceId: string;
  /** cluster.advertiseUrl, recorded with every heartbeat. */
  advertiseUrl: string | undefined;
  leaseMs: number;
  supervisor: TenantSupervisor;
  /** The tenants configured now. */
  tenants: () => readonly Tenant<TenantConfig>[];
  logger: Logger;
}

/**
 * Runs the tenants this replica holds the lease of, on a store shared by replicas (docs/leases.md):
 * a tenant starts when its lease is acquired, with every store write fenced by that lease; it
 * stops at once when the lease is lost; and on a hand-over (a replica joined) it stops first,
 * which drains its in-flight deliveries, and is released only then.
 */
export class TenantLeases {
  readonly keeper: LeaseKeeper;
  readonly table: LeaseTable;

  constructor(private readonly deps: TenantLeasesDeps) {
    this.table = new LeaseTable(deps.pool, { leaseMs: deps.leaseMs });
    this.keeper = new LeaseKeeper({
      table: this.table,
      instanceId: deps.instanceId,
      advertiseUrl: deps.advertiseUrl,
      leaseMs: deps.leaseMs,
      tenants: () => deps.tenants().map((t) => t.name),
      events: {
        acquired: (tenant, epoch) => this.handled(tenant, 'starting the tenant', this.acquired(tenant, epoch)),
        lost: (tenant, reason) => this.handled(tenant, 'stopping the lost tenant', this.lost(tenant, reason)),
        handOver: (tenant) => this.handled(tenant, 'handing the tenant over', this.handOver(tenant)),
        round: (outcome) => this.rounded(outcome),
      },
    });
  }

  start(): void {
    this.keeper.start();
  }

  /** The fence for a tenant's writes under the lease held now. */
  fenceOf(tenant: string): WriteFence {
    return this.keeper.fence(tenant);
  }

  /** A tenant held here whose config changed: restarted under the same lease. */
  async changed(tenant: Tenant<TenantConfig>): Promise<void> {
    if (this.keeper.canWrite(tenant.name)) await this.deps.supervisor.start(tenant);
  }

  /** A tenant no longer configured: stopped here and given up. */
  async removed(name: string): Promise<void> {
    const here = this.deps.supervisor.runtime(name) !== undefined || this.keeper.validUntil(name) !== undefined;
    await this.deps.supervisor.stop(name);
    await this.keeper.release(name);
    if (here)
      this.deps.logger.info({ tenant: name }, 'tenant file removed; tenant stopped here and its lease released');
  }

  /** Drains every tenant while the leases still hold, then releases them all for the others. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.deps.supervisor.stopAll();
    await this.keeper.stop();
  }

  /** Set by stop(): the leases the keeper then gives up were not lost. */
  private stopping = false;
  /** Logs the first failed round of a run of failures, and the recovery. */
  private failing = false;
  private rounded(outcome: { ok: true } | { ok: false; error: unknown }): void {
    if (outcome.ok) {
      if (this.failing) this.deps.logger.info('tenant leases renewed again');
      this.failing = false;
      return;
    }
    if (!this.failing)
      this.deps.logger.warn(
        { err: describeError(outcome.error) },
        'tenant leases could not be renewed; retrying (tenants stop before their leases may expire)',
      );
    this.failing = true;
  }

  /**
   * The one error route of the keeper's events: the keeper calls them synchronously and goes on
   * renewing, so each one's work ends here, logged once with its tenant, never unhandled.
   */
  private handled(tenant: string, what: string, work: Promise<void>): void {
    work.catch((error: unknown) =>
      this.deps.logger.error(
        { tenant, err: describeError(error) },
        `${what} failed; the next lease round decides again`,
      ),
    );
  }

  private async acquired(name: string, epoch: number): Promise<void> {
    const tenant = this.deps.tenants().find((t) => t.name === name);
    if (!tenant) return this.keeper.release(name);
    this.deps.logger.info({ tenant: name, epoch }, 'lease acquired; tenant starting here');
    await this.deps.supervisor.start(tenant);
    // Lost while it started: its writes are fenced already; do not leave it running.
    if (!this.keeper.canWrite(name)) await this.deps.supervisor.stop(name);
    // Did not start (the database went away meanwhile, say): give the lease back, so a later
    // round (here or elsewhere) starts it again, rather than hold a tenant nobody runs.
    else if (this.deps.supervisor.startFailures.has(name)) await this.keeper.release(name);
  }

  private async lost(name: string, reason: string): Promise<void> {
    // A replica stopping has drained its tenants already and gives their leases back: no warning.
    if (this.stopping) this.deps.logger.info({ tenant: name, reason }, 'lease given back; replica stopping');
    else this.deps.logger.warn({ tenant: name, reason }, 'lease lost; tenant stopped here');
    await this.deps.supervisor
      .stop(name)
      .catch((error: unknown) =>
        this.deps.logger.error({ tenant: name, err: describeError(error) }, 'stopping a lost tenant failed'),
      );
  }

  private async handOver(name: string): Promise<void> {
    this.deps.logger.info({ tenant: name }, 'handing the tenant over: draining, then releasing its lease');
    await this.deps.supervisor.stop(name).catch(() => undefined);
    await this.keeper.release(name);
  }
}
