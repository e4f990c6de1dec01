import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

const RENEWAL_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The leases of the replica serving now: the tenants configured, and those it holds. */
export interface LeaseView {
  configured(): readonly string[];
  held(): readonly string[];
}

/**
 * The tenant leases of this replica (PostgreSQL store). `changefeed_lease_held` is exported for
 * every configured tenant, 0 where another replica (or none) holds it, so that across replicas
 * `sum by (tenant) (changefeed_lease_held) == 0` shows a tenant nobody runs. Counters live as
 * long as the process: a reload does not reset them.
 */
export class LeaseMetrics {
  readonly acquired: Counter<'tenant'>;
  readonly lost: Counter<'tenant'>;
  readonly handedOver: Counter<'tenant'>;
  readonly renewal: Histogram;
  readonly failedRounds: Counter;
  readonly lockedRows: Counter<'statement'>;
  readonly lockedRounds: Gauge;
  private view: LeaseView | undefined;

  constructor(registry: Registry) {
    const registers = [registry];
    const view = () => this.view;
    new Gauge({
      name: 'changefeed_lease_held',
      help:
        '1 for a tenant whose lease this replica holds, 0 for a configured tenant it does not; only on a ' +
        'PostgreSQL store, where replicas share the tenants.',
      labelNames: ['tenant'],
      registers,
      collect() {
        this.reset();
        const leases = view();
        if (!leases) return;
        const held = new Set(leases.held());
        for (const tenant of new Set([...leases.configured(), ...held])) this.set({ tenant }, held.has(tenant) ? 1 : 0);
      },
    });
    const byTenant = (name: string, help: string) => new Counter({ name, help, labelNames: ['tenant'], registers });
    this.acquired = byTenant(
      'changefeed_lease_acquired_total',
      'Tenant leases this replica acquired (the tenant then starts here).',
    );
    this.lost = byTenant(
      'changefeed_lease_lost_total',
      'Tenant leases this replica lost without handing them over: not renewed in time, or taken over. ' +
        'Leases given back while the replica stops are not counted.',
    );
    this.handedOver = byTenant(
      'changefeed_lease_handed_over_total',
      'Tenant leases this replica handed over to another (after draining), to even out the tenants.',
    );
    this.renewal = new Histogram({
      name: 'changefeed_lease_renewal_duration_seconds',
      help: "Time a lease round took to heartbeat and renew every held lease: near the lease's safety margin, leases are at risk.",
      buckets: RENEWAL_BUCKETS,
      registers,
    });
    this.failedRounds = new Counter({
      name: 'changefeed_lease_rounds_failed_total',
      help: 'Lease rounds that failed (the store unreachable or refusing); tenants stop before their leases may expire.',
      registers,
    });
    this.lockedRows = new Counter({
      name: 'changefeed_lease_locked_rows_total',
      help:
        'Lease rows a round passed over because another transaction held them locked, by statement: held ' +
        'leases the renewal could not renew (renew: kept until their local deadline, then lost), valid leases ' +
        'the release of what the replica no longer keeps could not give up (release), free tenants its ' +
        'acquisition could not take (acquire); each asked again next round.',
      labelNames: ['statement'],
      registers,
    });
    this.lockedRounds = new Gauge({
      name: 'changefeed_lease_locked_rounds',
      help:
        'Lease rounds in a row, up to the last, that met lease rows another transaction held locked (leases ' +
        'left unanswered or rows passed over); 0 after a round that met none. A change of holder holds a row ' +
        'for less than a round; 3 or more: a session holds lease rows locked (alert ChangefeedLeaseRowsLocked).',
      registers,
    });
  }

  /** The leases of the daemon serving now (one at a time: a reload replaces it); undefined drops them. */
  watch(view: LeaseView | undefined): void {
    this.view = view;
  }
}
