import type pg from 'pg';
import { systemClock, type Clock, type SleepSignal } from '../../src/clock.js';
import { ManualClock } from './manualClock.js';
import { AbortedError } from '../../src/errors.js';
import { LeaseKeeper, type LeaseKeeperOptions, type LockedRows } from '../../src/cluster/leaseKeeper.js';
import { LeaseTable } from '../../src/cluster/leaseTable.js';

export type KeeperEvent =
  | { type: 'acquired'; tenant: string; epoch: number }
  | { type: 'lost'; tenant: string; reason: string }
  | { type: 'handOver'; tenant: string }
  | { type: 'round'; ok: boolean; lockedRows?: LockedRows; error?: unknown };

/**
 * A keeper under test, its events in order, and an owner that drains a handed-over tenant at
 * once (it has no deliveries in flight) and releases it. `onEvent` runs on every event of every
 * keeper created by the same `KeeperSet`, so tests check invariants at every observed point.
 */
export interface TestKeeper {
  readonly id: string;
  readonly keeper: LeaseKeeper;
  readonly table: LeaseTable;
  readonly events: KeeperEvent[];
  /** Releases started by hand-overs; awaited by `settle`. */
  readonly releases: Promise<void>[];
  /** The manual clock, if the keeper runs on one. */
  readonly clock: ManualClock | undefined;
  /** Whether started and not stopped: `tick` moves only these. */
  readonly running: boolean;
  start(): void;
  stop(): Promise<void>;
  /** Advance of the manual clock that brings the next round. */
  readonly renewEveryMs: number;
  /** Resolves after the keeper's next round, successful or not. */
  nextRound(): Promise<KeeperEvent>;
  count(type: KeeperEvent['type']): number;
}

export class KeeperSet {
  readonly keepers: TestKeeper[] = [];
  /** Checks of `onEvent` that failed, in order; `tick` and `assertNoViolations` throw the first. */
  readonly violations: unknown[] = [];
  private readonly waiters = new Set<() => void>();

  constructor(private readonly onEvent: (keeper: TestKeeper, event: KeeperEvent) => void = () => undefined) {}

  add(
    id: string,
    pool: pg.Pool,
    tenants: () => readonly string[],
    options: Partial<LeaseKeeperOptions> & {
      clock?: Clock;
      queryTimeoutMs?: number;
      /** Wraps the keeper's table, to inject a fault. */
      wrapTable?: (table: LeaseTable) => LeaseTable;
    } = {},
  ): TestKeeper {
    const leaseMs = options.leaseMs ?? 10_000;
    const plain = new LeaseTable(pool, { leaseMs, queryTimeoutMs: options.queryTimeoutMs });
    const table = options.wrapTable?.(plain) ?? plain;
    const events: KeeperEvent[] = [];
    const releases: Promise<void>[] = [];
    const roundWaiters: ((event: KeeperEvent) => void)[] = [];
    const record = (event: KeeperEvent): void => {
      events.push(event);
      // The keeper swallows what its listeners throw: keep a failed check to report it.
      try {
        this.onEvent(test, event);
      } catch (error) {
        this.violations.push(error);
      }
      if (event.type === 'round') for (const resolve of roundWaiters.splice(0)) resolve(event);
      for (const wake of [...this.waiters]) wake();
    };
    const clock = options.clock ?? new ManualClock(Date.UTC(2026, 0, 1));
    const keeper: LeaseKeeper = new LeaseKeeper({
      instanceId: id,
      leaseMs,
      tenants,
      random: () => 0.5,
      ...options,
      table,
      clock,
      events: {
        acquired: (tenant, epoch) => record({ type: 'acquired', tenant, epoch }),
        lost: (tenant, reason) => record({ type: 'lost', tenant, reason }),
        handOver: (tenant) => {
          record({ type: 'handOver', tenant });
          releases.push(keeper.release(tenant));
        },
        round: (outcome) => record({ type: 'round', ...outcome }),
      },
    });
    let running = false;
    const test: TestKeeper = {
      id,
      get running() {
        return running;
      },
      start: () => {
        running = true;
        keeper.start();
      },
      stop: () => {
        running = false;
        return keeper.stop();
      },
      renewEveryMs: leaseMs / 3,
      keeper,
      table: plain,
      events,
      releases,
      clock: clock instanceof ManualClock ? clock : undefined,
      nextRound: () => new Promise((resolve) => roundWaiters.push(resolve)),
      count: (type) => events.filter((e) => e.type === type).length,
    };
    this.keepers.push(test);
    return test;
  }

  /** Resolves once `condition` holds, checked after every event; fails after `timeoutMs` saying `what`. */
  until(what: string, condition: () => boolean, timeoutMs = 20_000): Promise<void> {
    if (condition()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`timed out after ${timeoutMs} ms waiting until ${what}`));
      }, timeoutMs);
      const check = (): void => {
        if (!condition()) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve();
      };
      this.waiters.add(check);
    });
  }

  /** One round of each running keeper on a manual clock, concurrently: they race in the database. */
  async tick(keepers: readonly TestKeeper[] = this.keepers): Promise<void> {
    await Promise.all(keepers.flatMap((k) => k.releases.splice(0)));
    await Promise.all(
      keepers.map(async (k) => {
        const round = k.nextRound();
        await k.clock!.advance(k.renewEveryMs);
        await round;
      }),
    );
    await Promise.all(keepers.flatMap((k) => k.releases.splice(0)));
    this.assertNoViolations();
  }

  assertNoViolations(): void {
    if (this.violations.length > 0) throw this.violations[0];
  }

  /** Ticks until `condition` holds, at most `rounds` times. */
  async tickUntil(what: string, condition: () => boolean, rounds = 12): Promise<void> {
    for (let i = 0; i < rounds && !condition(); i++) await this.tick(this.keepers.filter((k) => k.running));
    if (!condition()) throw new Error(`not reached after ${rounds} rounds: ${what}`);
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.keepers.map((k) => k.keeper.stop()));
  }
}

/**
 * Real time that can be paused, as SIGSTOP pauses a process: `now` keeps moving (the monotonic
 * clock does not stop while a process is stopped) but no sleep ends until `resume`.
 */
export class PausableClock implements Clock {
  private paused = false;
  private readonly held: (() => void)[] = [];

  now(): number {
    return systemClock.now();
  }

  sleep(ms: number, signal?: SleepSignal): Promise<void> {
    return systemClock.sleep(ms, signal).then(() => {
      if (!this.paused) return;
      return new Promise<void>((resolve, reject) => {
        if (signal?.aborted) reject(new AbortedError());
        this.held.push(resolve);
      });
    });
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    for (const wake of this.held.splice(0)) wake();
  }
}
