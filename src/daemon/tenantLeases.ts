import PQueue from 'p-queue';
import type pg from 'pg';
import type { Logger } from 'pino';
import { LeaseKeeper, type LeaseKeeperOptions, type LockedRows, type RoundOutcome } from '../cluster/leaseKeeper.js';
import { LeaseTable } from '../cluster/leaseTable.js';
import type { TenantConfig } from '../config/tenantConfigSchema.js';
import { describeError } from '../errors.js';
import type { LeaseMetrics } from '../observe/leaseMetrics.js';
import type { Tenant } from '../tenants/tenant.js';
import type { TenantSupervisor } from './tenantSupervisor.js';

/**
 * Tenants starting at once after one lease round (a takeover acquires a dead replica's whole
 * share at once). A bound keeps the store's pool and the event loop free for the tenants already
 * running; the figure is measured in docs/scaling.md.
 */
export const TENANT_STARTS_AT_ONCE = 64;

export interface TenantLeasesDeps extends Pick<
  LeaseKeeperOptions,
  'instanceId' | 'advertised' | 'leaseMs' | 'recorded'
> {
  /** The PostgreSQL store's lease pool, whose queries never wait behind the tenants' (PostgresStoreBackend.leasePool). */
  pool: pg.Pool;
  supervisor: TenantSupervisor;
  tenants: () => readonly Tenant<TenantConfig>[];
  logger: Logger;
  /** The process's lease metrics: this replica's leases are shown there while it runs. */
  metrics: LeaseMetrics;
}

/**
 * Runs the tenants this replica holds the lease of, on a store shared by replicas (docs/leases.md):
 * a tenant starts when its lease is acquired, with every store write fenced by that lease; it
 * stops at once when the lease is lost, its deliveries in flight aborted; and on a hand-over (a
 * replica joined) it stops first, draining its deliveries in flight, and is released only then.
 * Every handler of the keeper's events is kept until it settles, so stop() waits for them all.
 */
export class TenantLeases {
  readonly keeper: LeaseKeeper;
  readonly table: LeaseTable;

  constructor(private readonly deps: TenantLeasesDeps) {
    this.table = new LeaseTable(deps.pool, { leaseMs: deps.leaseMs });
    this.keeper = new LeaseKeeper({
      ...deps,
      table: this.table,
      tenants: () => deps.tenants().map((t) => t.name),
      keyOf: (tenant) => this.configured(tenant)?.keyFingerprint,
      events: {
        acquired: (tenant, epoch) => this.handle(tenant, 'starting the tenant', () => this.acquired(tenant, epoch)),
        lost: (tenant, reason) => this.handle(tenant, 'stopping the lost tenant', () => this.lost(tenant, reason)),
        handOver: (tenant) => this.handle(tenant, 'handing the tenant over', () => this.handOver(tenant)),
        round: (outcome) => this.rounded(outcome),
      },
    });
    deps.metrics.watch({
      configured: () => deps.tenants().map((t) => t.name),
      held: () => this.keeper.heldLeases().map((l) => l.tenant),
    });
  }

  /**
   * A tenant held here whose config changed: restarted under the same lease. Not one being handed
   * over: its start would come after the drain, once the lease is released, and fail for want of
   * it (logged, and left in /readyz as a start that failed); the next holder reads the new file.
   */
  async changed(tenant: Tenant<TenantConfig>): Promise<void> {
    if (this.keeper.canWrite(tenant.name) && !this.keeper.handingOver(tenant.name))
      await this.deps.supervisor.start(tenant);
  }

  /** A tenant no longer configured: stopped here and given up. */
  async removed(name: string): Promise<void> {
    const here = this.deps.supervisor.runtime(name) !== undefined || this.keeper.validUntil(name) !== undefined;
    this.keeper.givingUp(name);
    await this.deps.supervisor.stop(name);
    await this.keeper.release(name);
    if (here)
      this.deps.logger.info({ tenant: name }, 'tenant file removed; tenant stopped here and its lease released');
  }

  /**
   * In order: takes no tenant from now on, lets the handlers under way finish (a tenant starting
   * is then running, to be drained), drains every tenant while the keeper still renews their
   * leases, and only then releases the leases for the others. Resolves once nothing runs here.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    this.keeper.stopAcquiring();
    await this.handled();
    await this.deps.supervisor.stopAll();
    await this.keeper.stop();
    // The keeper reports each lease it gave back as lost: those handlers find nothing running.
    await this.handled();
  }

  private indexed: readonly Tenant<TenantConfig>[] | undefined;
  private byName = new Map<string, Tenant<TenantConfig>>();

  /**
   * The tenant configured now under `name`, from an index: every round asks for the key of each
   * tenant held. The daemon replaces its list when the directory changes, so the index is rebuilt only then.
   */
  private configured(name: string): Tenant<TenantConfig> | undefined {
    const tenants = this.deps.tenants();
    if (tenants !== this.indexed) {
      this.indexed = tenants;
      this.byName = new Map(tenants.map((t) => [t.name, t]));
    }
    return this.byName.get(name);
  }

  /** Set by stop(): the leases the keeper then gives up were not lost. */
  private stopping = false;
  private readonly handling = new Set<Promise<void>>();
  /** The starts of acquired tenants, TENANT_STARTS_AT_ONCE at a time, in the order acquired. */
  private readonly starts = new PQueue({ concurrency: TENANT_STARTS_AT_ONCE });

  /** Runs a handler of a keeper event, kept until it settles; what it throws is logged with the tenant. */
  private handle(tenant: string, what: string, handler: () => Promise<void>): void {
    const task: Promise<void> = handler()
      .catch((error: unknown) => {
        this.deps.logger.error({ tenant, err: describeError(error) }, `${what} failed`);
      })
      .finally(() => this.handling.delete(task));
    this.handling.add(task);
  }

  /** Resolves once no handler is under way, including those started while waiting. */
  private async handled(): Promise<void> {
    while (this.handling.size > 0) await Promise.all(this.handling);
  }

  private failing = false;
  private sittingOut = false;
  /** Logs the first failed round of a run of failures, and the recovery; and when the replica starts or stops sitting the deal out. */
  private rounded(outcome: RoundOutcome): void {
    // One line per round, after the acquisitions it logged, with `dealt` (RoundOutcome says why).
    this.deps.logger.debug(outcome.ok ? { ok: true, dealt: outcome.dealt } : { ok: false }, 'lease round');
    if (outcome.ok) {
      this.deps.metrics.renewal.observe(outcome.renewalMs / 1000);
      for (const statement of ['renew', 'release', 'acquire'] as const) {
        const rows = outcome.lockedRows[statement];
        if (rows > 0) this.deps.metrics.lockedRows.inc({ statement }, rows);
      }
      this.noteLockedRows(outcome.lockedRows);
    } else this.deps.metrics.failedRounds.inc();
    const sittingOut = this.keeper.sittingOut;
    if (sittingOut !== undefined && !this.sittingOut) this.deps.logger.warn(sittingOut);
    if (sittingOut === undefined && this.sittingOut)
      this.deps.logger.info(
        "this replica's tenants directory has every tenant the others run again; it takes part in the lease deal",
      );
    this.sittingOut = sittingOut !== undefined;
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

  private lockedRounds = 0;
  /**
   * Counts the rounds in a row that met lease rows locked elsewhere (held leases left unanswered,
   * or rows passed over), and warns at the first of a run and at its end.
   */
  private noteLockedRows(lockedRows: LockedRows): void {
    const locked = lockedRows.renew + lockedRows.release + lockedRows.acquire > 0;
    if (locked && this.lockedRounds === 0)
      this.deps.logger.warn(
        { lockedRows },
        'tenant leases not renewed or not taken: another transaction holds their rows locked (a release, ' +
          "an acquisition, an old holder's open write, or an operator's session); asked again every round, a held " +
          'one is lost at its local deadline if this lasts',
      );
    if (!locked && this.lockedRounds > 0)
      this.deps.logger.info(
        { rounds: this.lockedRounds },
        'lease rows no longer met locked: held leases renewed and free tenants taken again',
      );
    this.lockedRounds = locked ? this.lockedRounds + 1 : 0;
    this.deps.metrics.lockedRounds.set(this.lockedRounds);
  }

  private async acquired(name: string, epoch: number): Promise<void> {
    this.deps.metrics.acquired.inc({ tenant: name });
    const tenant = this.configured(name);
    // Acquired as the replica began to stop: given back rather than started.
    if (!tenant || this.stopping) return this.keeper.release(name);
    this.deps.logger.info({ tenant: name, epoch }, 'lease acquired; tenant starting here');
    await this.starts.add(async () => {
      // Lost while it waited its turn (its lost handler found nothing running), or the replica
      // began to stop: not started; the lease goes back with the others.
      if (this.keeper.canWrite(name) && !this.stopping) await this.deps.supervisor.start(tenant);
    });
    // Lost while it started: its writes are fenced already; do not leave it running.
    if (!this.keeper.canWrite(name)) await this.deps.supervisor.stop(name, { abort: true });
    // Did not start (the database went away meanwhile, say): give the lease back, so a later
    // round (here or elsewhere) starts it again, rather than hold a tenant nobody runs.
    else if (this.deps.supervisor.startFailures.has(name)) await this.keeper.release(name);
  }

  private async lost(name: string, reason: string): Promise<void> {
    // A replica stopping has drained its tenants already and gives their leases back: no warning.
    if (this.stopping) this.deps.logger.info({ tenant: name, reason }, 'lease given back; replica stopping');
    else {
      this.deps.metrics.lost.inc({ tenant: name });
      this.deps.logger.warn({ tenant: name, reason }, 'lease lost; tenant stopped here');
    }
    // Its acks would be refused by the fence: deliveries in flight are aborted, not drained.
    await this.deps.supervisor.stop(name, { abort: true });
  }

  private async handOver(name: string): Promise<void> {
    this.deps.metrics.handedOver.inc({ tenant: name });
    this.deps.logger.info({ tenant: name }, 'handing the tenant over: draining, then releasing its lease');
    try {
      await this.deps.supervisor.stop(name);
    } finally {
      await this.keeper.release(name);
    }
  }
}
