/** A lease this replica holds, as it knows it locally. */
export interface HeldLease {
  readonly tenant: string;
  readonly epoch: number;
  /**
   * Until when (keeper clock, ms) this replica may write: the moment the acquire or renew request
   * that granted the lease was sent, plus the lease duration, minus the safety margin. The
   * database started its own count later (when it ran the statement), so this deadline falls
   * before the database's expiry even if the answer took long to arrive.
   */
  readonly writableUntil: number;
  /** When the hand-over of this tenant was announced; undefined while it is not handed over. */
  readonly handOverSince: number | undefined;
}

/**
 * The leases this replica holds and their local deadlines. Pure bookkeeping: no timers, no
 * database; the keeper asks it what is due and when the next deadline falls.
 */
export class HeldLeases {
  private readonly leases = new Map<string, HeldLease>();

  /** `validMs`: lease duration minus the safety margin. */
  constructor(private readonly validMs: number) {}

  /** A fresh acquisition, from a request sent at `sentAt`. */
  grant(tenant: string, epoch: number, sentAt: number): void {
    this.leases.set(tenant, { tenant, epoch, writableUntil: sentAt + this.validMs, handOverSince: undefined });
  }

  /**
   * A renewal sent at `sentAt` succeeded. Ignored if the lease was dropped or re-acquired at
   * another epoch meanwhile: an answer must not revive a lease already given up.
   */
  extend(tenant: string, epoch: number, sentAt: number): void {
    const lease = this.leases.get(tenant);
    if (lease?.epoch === epoch)
      this.leases.set(tenant, { ...lease, writableUntil: Math.max(lease.writableUntil, sentAt + this.validMs) });
  }

  markHandOver(tenant: string, now: number): void {
    const lease = this.leases.get(tenant);
    if (lease && lease.handOverSince === undefined) this.leases.set(tenant, { ...lease, handOverSince: now });
  }

  /** Forgets the lease; returns it if it was held (at `epoch`, when given). */
  drop(tenant: string, epoch?: number): HeldLease | undefined {
    const lease = this.leases.get(tenant);
    if (!lease || (epoch !== undefined && lease.epoch !== epoch)) return undefined;
    this.leases.delete(tenant);
    return lease;
  }

  get(tenant: string): HeldLease | undefined {
    return this.leases.get(tenant);
  }

  /** Held and before its local deadline. */
  canWrite(tenant: string, now: number): boolean {
    const lease = this.leases.get(tenant);
    return lease !== undefined && now < lease.writableUntil;
  }

  /** Leases past their local deadline. */
  due(now: number): HeldLease[] {
    return [...this.leases.values()].filter((lease) => now >= lease.writableUntil);
  }

  /** Hand-overs announced at or before `since` and still not released. */
  handOversSince(since: number): HeldLease[] {
    return [...this.leases.values()].filter((l) => l.handOverSince !== undefined && l.handOverSince <= since);
  }

  earliestDeadline(): number | undefined {
    let earliest: number | undefined;
    for (const lease of this.leases.values())
      if (earliest === undefined || lease.writableUntil < earliest) earliest = lease.writableUntil;
    return earliest;
  }

  handingOver(): Set<string> {
    return new Set([...this.leases.values()].filter((l) => l.handOverSince !== undefined).map((l) => l.tenant));
  }

  all(): HeldLease[] {
    return [...this.leases.values()].sort((a, b) => (a.tenant < b.tenant ? -1 : a.tenant > b.tenant ? 1 : 0));
  }

  get size(): number {
    return this.leases.size;
  }
}
