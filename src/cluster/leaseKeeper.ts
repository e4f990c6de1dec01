import { backoffDelayMs, type BackoffPolicy } from '../backoff.js';
import { systemClock, type Clock } from '../clock.js';
import { describeError } from '../errors.js';
import { HeldLeases, type HeldLease } from './heldLeases.js';
import { assignLeases, tenantsMissingHere } from './leaseAssignment.js';
import { nextRoundAt } from './roundCadence.js';
import type { AdvertisedUrls, LeaseTable } from './leaseTable.js';
import { LeaseLostError, databaseFence, type WriteFence } from './writeFence.js';

/**
 * What the keeper tells its owner (the daemon). Called synchronously from the keeper's loop or
 * its deadline timer; a callback that throws is ignored, so one broken listener cannot stop the
 * leases of every tenant from being renewed.
 */
export interface LeaseEvents {
  /** This replica now holds `tenant` at `epoch`: start it, fencing its writes with `fence(tenant)`. */
  acquired(tenant: string, epoch: number): void;
  /** Stop `tenant` now, without draining: its lease could not be renewed in time or was taken over. */
  lost(tenant: string, reason: string): void;
  /** Another replica should have `tenant`: drain its in-flight deliveries, then call `release(tenant)`. */
  handOver(tenant: string): void;
  /** After every round, for metrics and tests. */
  round?(outcome: RoundOutcome): void;
}

/**
 * The lease rows each statement of a round passed over because another transaction held them
 * locked: held leases the renewal left unanswered (kept until their local deadline, asked again
 * next round), valid leases the release of what it does not keep could not give up, and free rows
 * the acquisition could not take. Once a lease is lost at its local deadline no renewal asks for
 * its row again: the release, then the acquisition, are what still show the lock.
 */
export interface LockedRows {
  renew: number;
  release: number;
  acquire: number;
}

/**
 * A round's outcome; a good one says how long heartbeat and renewal took (the part leases ride on),
 * the rows it passed over (LockedRows), and how many tenants it dealt (undefined: it dealt none,
 * stopping or sitting out), so a tenant left out of a round that counted it can be told from one
 * the round had not seen yet.
 */
export type RoundOutcome =
  { ok: true; renewalMs: number; lockedRows: LockedRows; dealt: number | undefined } | { ok: false; error: unknown };

export interface LeaseKeeperOptions {
  table: LeaseTable;
  instanceId: string;
  /** Where this replica is reached, recorded with every heartbeat, so the others can send clients here. */
  advertised?: AdvertisedUrls;
  /** cluster.leaseSeconds in milliseconds. */
  leaseMs: number;
  /** The tenants configured now; read every round, so tenants may come and go. */
  tenants: () => readonly string[];
  /**
   * The tenants the shared store records (settleTenants), read every round: while another replica
   * validly holds one that `tenants` lacks, this replica sits the deal out (tenantsMissingHere).
   * Default: none.
   */
  recorded?: () => readonly string[];
  /** The key fingerprint `tenant` polls with: its acquisition is refused while another tenant's lease holds it. */
  keyOf?: (tenant: string) => string | undefined;
  events: LeaseEvents;
  /** Measures local deadlines and paces the loop. Default: systemClock (monotonic). */
  clock?: Clock;
  random?: () => number;
}

type KeeperState = 'created' | 'active' | 'draining' | 'stopping' | 'stopped';

/** Rounds between deletions of long-dead instance rows. */
const FORGET_INSTANCES_EVERY_ROUNDS = 100;

/**
 * Holds this replica's share of the tenants (docs/leases.md). Every `renewEveryMs` one round:
 * renew every held lease in one statement, release what the database credits to this replica but
 * it does not know it holds, heartbeat (unless it sits the deal out: tenantsMissingHere), then ask
 * assignLeases what to take and hand over, and do it. A deadline timer drops every lease whose
 * local deadline passed, so a replica whose database is away (or hangs) stops writing in time.
 * State: created -> active [-> draining: stopAcquiring] -> stopping -> stopped; stop() awaits the loop.
 */
export class LeaseKeeper {
  private readonly clock: Clock;
  private readonly held: HeldLeases;
  private readonly renewEveryMs: number;
  private readonly handOverTimeoutMs: number;
  private readonly retry: BackoffPolicy;
  private state: KeeperState = 'created';
  private readonly stopController = new AbortController();
  private deadlineTimer: AbortController | undefined;
  private loop: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;
  private failure: { since: number; attempts: number; error: string } | undefined;
  private rounds = 0;
  /** Set while this replica sits the deal out: the tenants it lacks. */
  private missingHere: string[] | undefined;

  constructor(private readonly options: LeaseKeeperOptions) {
    this.clock = options.clock ?? systemClock;
    // A third of the lease, so two renewals in a row may fail before a lease is at risk.
    this.renewEveryMs = options.leaseMs / 3;
    // Writing stops this long before the lease may expire: a fifth of it, at least 1 s, at most half.
    const margin = Math.min(Math.max(options.leaseMs / 5, 1_000), options.leaseMs / 2);
    this.held = new HeldLeases(options.leaseMs - margin);
    // A hand-over not released by then is released anyway (its tenant gets `lost`).
    this.handOverTimeoutMs = Math.max(2 * options.leaseMs, 60_000);
    // Waits after failed rounds: 100 ms growing to the renewal interval, full jitter.
    this.retry = { initialMs: 100, maxMs: this.renewEveryMs, minMs: 10 };
  }

  get instanceId(): string {
    return this.options.instanceId;
  }

  start(): void {
    if (this.state !== 'created') throw new Error(`lease keeper cannot start: it is ${this.state}`);
    this.state = 'active';
    this.loop = this.run();
  }

  /**
   * Why this replica sits the lease deal out (for /readyz): tenants other replicas run that its
   * tenants directory lacks. Undefined while it takes part.
   */
  get sittingOut(): string | undefined {
    const missing = this.missingHere;
    if (missing === undefined) return undefined;
    const listed =
      missing.length > 5 ? `${missing.slice(0, 5).join(', ')} and ${missing.length - 5} more` : missing.join(', ');
    return (
      `this replica's tenants directory lacks ${missing.length} tenants that other replicas run (${listed}): it ` +
      'takes no tenant and is not counted in the lease deal, so the others take every tenant, until its ' +
      'directory holds the same tenant files as theirs'
    );
  }

  /** Why the leases cannot be kept up (for /readyz), or undefined while rounds succeed. */
  get problem(): string | undefined {
    if (!this.failure) return undefined;
    const { since, attempts, error } = this.failure;
    const seconds = Math.round((this.clock.now() - since) / 1000);
    return (
      `tenant leases not renewed for ${seconds} s (${attempts} failed rounds in a row): ${error}; check that the ` +
      `PostgreSQL store is reachable. Holding ${this.held.size} tenants, each stopped before its lease may expire`
    );
  }

  /** Whether this replica may write `tenant` now: held, and before the local deadline. */
  canWrite(tenant: string): boolean {
    return this.held.canWrite(tenant, this.clock.now());
  }

  /** Whether `tenant` is held here and being handed over or given up (handOver, givingUp): drained for its release. */
  handingOver(tenant: string): boolean {
    return this.held.get(tenant)?.handOverSince !== undefined;
  }

  /** The local deadline of `tenant`'s lease (keeper clock, ms), or undefined if not held. */
  validUntil(tenant: string): number | undefined {
    return this.held.get(tenant)?.writableUntil;
  }

  /** The leases held now, for `status`. */
  heldLeases(): HeldLease[] {
    return this.held.all();
  }

  /**
   * The fence for `tenant`'s writes under its current epoch: it refuses at once (no round trip)
   * once the local deadline passed or the tenant was lost, else asks the database in the
   * caller's transaction. Throws LeaseLostError if the tenant is not held now.
   */
  fence(tenant: string): WriteFence {
    const lease = this.held.get(tenant);
    if (!lease) throw new LeaseLostError(tenant, `${this.instanceId} does not hold it`);
    const claim = { tenant, holder: this.instanceId, epoch: lease.epoch };
    return databaseFence(claim, this.options.leaseMs, () => this.locallyValid(tenant, lease.epoch));
  }

  /**
   * What `tenant`'s service client calls right before each request leaves, and its sink workers
   * right before each write to a sink (`refused` names what was not done): it throws
   * LeaseLostError (no round trip) once the lease held now is past its local deadline or given up.
   * A replica resumed after a pause (SIGSTOP, a frozen VM) runs I/O callbacks, and timers due
   * before the deadline's, ahead of the deadline's timer: without this check such a poll would
   * reach the service, and a sink's retry the sink, while another replica holds the tenant.
   * Throws LeaseLostError if not held now.
   */
  requestGuard(tenant: string): (refused?: string) => void {
    const lease = this.held.get(tenant);
    if (!lease) throw new LeaseLostError(tenant, `${this.instanceId} does not hold it`);
    return (refused = 'the request was not sent') => {
      if (!this.locallyValid(tenant, lease.epoch))
        throw new LeaseLostError(tenant, `epoch ${lease.epoch} is past its local deadline or was given up`, refused);
    };
  }

  /** Whether the lease of `tenant` at `epoch` is held and before its local deadline. */
  private locallyValid(tenant: string, epoch: number): boolean {
    if (this.held.get(tenant)?.epoch === epoch && this.canWrite(tenant)) return true;
    // Refused before the deadline's timer ran (a stalled event loop runs I/O first): the refusal
    // stops the tenant, so the lease is given up now, or a renewal answered meanwhile would keep
    // it for a tenant nobody runs.
    this.expireDue();
    return false;
  }

  /**
   * Gives `tenant` up: the owner drained it after `handOver`, or stops it for another reason.
   * Local writes stop at once; the database release is best effort (if it fails the lease simply
   * expires, and the next round releases it).
   */
  async release(tenant: string): Promise<void> {
    const lease = this.held.drop(tenant);
    if (!lease) return;
    this.armDeadlineTimer();
    this.toRelease.set(tenant, lease.epoch);
    this.releasing ??= this.sendReleases();
    await this.releasing;
  }

  /** Leases given up here whose release the database has not been sent yet, by tenant: their epochs. */
  private readonly toRelease = new Map<string, number>();
  /** The releases under way: one statement at a time, each for every lease given up meanwhile. */
  private releasing: Promise<void> | undefined;
  /** The tenants of the release statement under way. */
  private releasingNow: readonly string[] = [];

  /**
   * Sends the releases waiting, one statement for all of them, until none waits. One at a time,
   * so the lease pool's other connection stays free for the rounds, whose renewals must not wait
   * behind tenants given up (hundreds when starts fail together; docs/scaling.md).
   */
  private async sendReleases(): Promise<void> {
    for (;;) {
      if (this.toRelease.size === 0) {
        this.releasing = undefined;
        return;
      }
      const leases = [...this.toRelease].map(([tenant, epoch]) => ({ tenant, epoch }));
      this.toRelease.clear();
      this.releasingNow = leases.map((l) => l.tenant);
      // Best effort (release()): a refused release, or a row passed over (held locked elsewhere),
      // is left to the next round's releaseAllExcept, or to expire.
      await this.options.table.releaseMany(this.instanceId, leases).catch(() => undefined);
      this.releasingNow = [];
    }
  }

  /**
   * The owner gives `tenant` up on its own (its tenant file was removed) and releases it once
   * drained: counted as handed over from now, so that a round meanwhile, which no longer finds it
   * configured, does not hand it over a second time, and so that the hand-over deadline bounds
   * the drain as it bounds a hand-over's.
   */
  givingUp(tenant: string): void {
    this.held.markHandOver(tenant, this.clock.now());
  }

  /**
   * A graceful stop's first step: takes no tenant and hands none over from now on, but renews what it
   * holds, so the owner drains its tenants under valid leases before stop() releases them.
   */
  stopAcquiring(): void {
    if (this.state === 'active') this.state = 'draining';
  }

  /**
   * Stops renewing. Every lease still held is reported `lost` (its tenant must stop writing) and
   * released, and the instance row deleted, so the others take the tenants over at their next
   * round instead of after expiry.
   */
  stop(): Promise<void> {
    this.stopping ??= this.shutDown();
    return this.stopping;
  }

  private async shutDown(): Promise<void> {
    this.state = 'stopping';
    this.stopController.abort();
    await this.loop;
    this.deadlineTimer?.abort();
    const left = this.held.all();
    for (const lease of left) {
      this.held.drop(lease.tenant);
      this.emit(() => this.options.events.lost(lease.tenant, 'this replica is stopping'));
    }
    const { table } = this.options;
    await this.releasing;
    await table.releaseMany(this.instanceId, left).catch(() => undefined);
    await table.retireInstance(this.instanceId).catch(() => undefined);
    this.state = 'stopped';
  }

  private async run(): Promise<void> {
    while (this.state === 'active' || this.state === 'draining') {
      const startedAt = this.clock.now();
      let waitMs: number;
      try {
        const { renewalMs, lockedRows, nextAt, dealt } = await this.round(startedAt + this.renewEveryMs);
        this.failure = undefined;
        waitMs = nextAt - this.clock.now();
        this.emit(() => this.options.events.round?.({ ok: true, renewalMs, lockedRows, dealt }));
      } catch (error) {
        if (this.stopController.signal.aborted) break;
        const attempts = (this.failure?.attempts ?? 0) + 1;
        this.failure = { since: this.failure?.since ?? startedAt, attempts, error: describeError(error) };
        waitMs = backoffDelayMs(attempts, this.retry, this.options.random);
        this.emit(() => this.options.events.round?.({ ok: false, error }));
      }
      try {
        await this.clock.sleep(Math.max(0, waitMs), this.stopController.signal);
      } catch {
        break; // stopped
      }
    }
  }

  /**
   * One round; returns how long its renewal took, ms, and when the next one runs: `regularAt`, or
   * sooner when a lease another replica holds becomes free to take before then (nextRoundAt).
   */
  private async round(
    regularAt: number,
  ): Promise<{ renewalMs: number; lockedRows: LockedRows; nextAt: number; dealt?: number }> {
    const { table, instanceId: me } = this.options;
    const startedAt = this.clock.now();
    const lockedRows: LockedRows = { renew: await this.renewHeld(), release: 0, acquire: 0 };
    const renewalMs = this.clock.now() - startedAt;
    // Leases whose release is waiting or under way are left to it: met here under that release's
    // lock, they would be counted as rows another transaction holds.
    const unkept = await table.releaseAllExcept(me, [
      ...this.held.all().map((l) => l.tenant),
      ...this.toRelease.keys(),
      ...this.releasingNow,
    ]);
    lockedRows.release = unkept.passedOver.length;
    const regular = { renewalMs, lockedRows, nextAt: regularAt };
    this.finishStaleHandOvers();
    if (this.state !== 'active') {
      await table.heartbeat(me, this.options.advertised);
      return regular;
    }

    const tenants = this.options.tenants();
    const rows = await table.list();
    const readAt = this.clock.now();
    const leases = new Map<string, string>();
    for (const row of rows) if (row.holder !== undefined && row.expiresInMs > 0) leases.set(row.tenant, row.holder);
    // Sitting out, it heartbeats not at all (a heartbeat even for an instant would count it live
    // in the others' deal, and they would hand tenants over to it): it renews what it holds.
    const missing = tenantsMissingHere({ me, tenants, recorded: this.options.recorded?.() ?? [], leases });
    let live: string[];
    if (missing.length > 0) {
      this.missingHere = missing;
      await table.retireInstance(me);
      // Sitting out leaves its share to the replicas taking part. With none (each replica lacks a
      // tenant another holds), a free tenant would stay unheld until the views agree: it takes the
      // free tenants it knows as if alone, still without a heartbeat.
      if ((await table.liveInstances()).some((instance) => instance !== me)) return regular;
      live = [me];
    } else {
      this.missingHere = undefined;
      await table.heartbeat(me, this.options.advertised);
      live = await table.liveInstances();
    }
    const decision = assignLeases({ me, tenants, liveInstances: live, leases, handingOver: this.held.handingOver() });

    for (const tenant of decision.release) {
      if (!this.held.get(tenant)) continue;
      this.held.markHandOver(tenant, this.clock.now());
      this.emit(() => this.options.events.handOver(tenant));
    }
    if (decision.acquire.length > 0) {
      const sentAt = this.clock.now();
      const wanted = decision.acquire.map((tenant) => ({ tenant, keyFingerprint: this.options.keyOf?.(tenant) }));
      // Those missing from the answer: another replica was faster, another tenant's lease polls
      // the key, or another transaction holds the row locked (passed over); the next round sees it.
      const answer = await table.acquireMany(me, wanted);
      const granted = answer.granted;
      lockedRows.acquire = answer.passedOver.length;
      for (const lease of granted) this.held.grant(lease.tenant, lease.epoch, sentAt);
      this.armDeadlineTimer();
      // Stopping since it was sent: nobody here will start them, so they are freed for the others.
      if (this.state !== 'active') {
        await Promise.all(granted.map((lease) => this.release(lease.tenant)));
        return { ...regular, dealt: tenants.length };
      }
      for (const lease of granted) this.emit(() => this.options.events.acquired(lease.tenant, lease.epoch));
    }

    // Forgetting rows by a view that lacks tenants others run is left to the replicas taking part.
    if (missing.length > 0) return { ...regular, dealt: tenants.length };
    const configured = new Set(tenants);
    if (rows.some((row) => !configured.has(row.tenant) && !leases.has(row.tenant))) await table.forgetTenants(tenants);
    if (++this.rounds % FORGET_INSTANCES_EVERY_ROUNDS === 0) await table.forgetDeadInstances();
    return { ...regular, nextAt: nextRoundAt({ me, regularAt, readAt, rows }), dealt: tenants.length };
  }

  /**
   * Renews every held lease in one statement; those the database refused are lost. Returns how
   * many it left unanswered (LockedRows.renew): they keep their local deadline.
   */
  private async renewHeld(): Promise<number> {
    const held = this.held.all();
    if (held.length === 0) return 0;
    const sentAt = this.clock.now();
    const keyOf = this.options.keyOf;
    const { renewed, locked } = await this.options.table.renew(
      this.instanceId,
      keyOf === undefined ? held : held.map((lease) => ({ ...lease, keyFingerprint: keyOf(lease.tenant) })),
    );
    const ok = new Set(renewed.map((r) => `${r.tenant}\u0000${r.epoch}`));
    const unanswered = new Set(locked);
    for (const lease of held) {
      if (ok.has(`${lease.tenant}\u0000${lease.epoch}`)) this.held.extend(lease.tenant, lease.epoch, sentAt);
      else if (!unanswered.has(lease.tenant) && this.held.drop(lease.tenant, lease.epoch))
        this.emit(() =>
          this.options.events.lost(
            lease.tenant,
            'the database refused the renewal (expired, taken over, or its new key held by another tenant)',
          ),
        );
    }
    this.armDeadlineTimer();
    return unanswered.size;
  }

  /** Hand-overs the owner never completed: released anyway, so the tenant cannot stay stuck here. */
  private finishStaleHandOvers(): void {
    for (const lease of this.held.handOversSince(this.clock.now() - this.handOverTimeoutMs)) {
      this.emit(() =>
        this.options.events.lost(lease.tenant, `hand-over not completed within ${this.handOverTimeoutMs} ms`),
      );
      // release() never rejects: a release the database refused leaves the lease to expire.
      this.release(lease.tenant).catch(() => undefined);
    }
  }

  /** Arms one timer for the earliest local deadline; when it fires, every due lease is lost. */
  private armDeadlineTimer(): void {
    this.deadlineTimer?.abort();
    const next = this.held.earliestDeadline();
    if (next === undefined || this.state === 'stopped') return;
    const timer = new AbortController();
    this.deadlineTimer = timer;
    this.clock.sleep(Math.max(0, next - this.clock.now()), timer.signal).then(
      () => this.expireDue(),
      () => undefined, // re-armed or stopped
    );
  }

  private expireDue(): void {
    for (const lease of this.held.due(this.clock.now())) {
      this.held.drop(lease.tenant, lease.epoch);
      this.emit(() =>
        this.options.events.lost(lease.tenant, 'not renewed before its local deadline (the lease may expire soon)'),
      );
    }
    this.armDeadlineTimer();
  }

  private emit(call: () => void): void {
    try {
      call();
    } catch {
      // A listener's failure is its own; the leases of the other tenants must still be kept.
    }
  }
}
