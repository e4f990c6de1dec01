import { describe, expect, it } from 'vitest';
import { ManualClock } from '../support/manualClock.js';
import { LeaseKeeper, type LeaseEvents } from '../../src/cluster/leaseKeeper.js';
import type { LeaseTable } from '../../src/cluster/leaseTable.js';

const START = Date.UTC(2026, 0, 1);

/**
 * A lease table in memory whose answers the test holds back: enough to pin down the keeper's
 * own arithmetic (when a deadline starts, what stop does) without a database. The behaviour
 * against PostgreSQL is in test/cluster/.
 */
function fakeTable(clock: ManualClock) {
  const calls: string[] = [];
  let answerAfterMs = 0;
  let hang = false;
  const answer = async <T>(value: T): Promise<T> => {
    if (hang) await new Promise(() => undefined);
    if (answerAfterMs > 0) await clock.advance(answerAfterMs);
    return value;
  };
  const table = {
    heartbeat: () => answer(new Date()),
    liveInstances: () => answer(['a']),
    releaseAllExcept: () => answer({ released: [], passedOver: [] }),
    list: () => answer([]),
    forgetTenants: () => answer([]),
    forgetDeadInstances: () => answer(0),
    acquireMany: (_holder: string, wanted: { tenant: string }[]) =>
      answer({ granted: wanted.map(({ tenant }) => ({ tenant, epoch: 1, expiresAt: new Date() })), passedOver: [] }),
    renew: (_holder: string, leases: { tenant: string; epoch: number }[]) =>
      answer({ renewed: leases.map((l) => ({ ...l, expiresAt: new Date() })), locked: [] }),
    releaseMany: (_holder: string, leases: { tenant: string }[]) => {
      for (const { tenant } of leases) calls.push(`release ${tenant}`);
      return Promise.resolve(leases.map((l) => l.tenant));
    },
    retireInstance: (id: string) => {
      calls.push(`retire ${id}`);
      return Promise.resolve();
    },
  };
  return {
    table: table as unknown as LeaseTable,
    calls,
    slowAnswers: (ms: number) => (answerAfterMs = ms),
    hangAnswers: () => (hang = true),
  };
}

function recorder(extra: Partial<LeaseEvents> = {}) {
  const log: string[] = [];
  const events: LeaseEvents = {
    acquired: (tenant, epoch) => log.push(`acquired ${tenant}@${epoch}`),
    lost: (tenant, reason) => log.push(`lost ${tenant}: ${reason}`),
    handOver: (tenant) => log.push(`handOver ${tenant}`),
    ...extra,
  };
  let onRound: (() => void) | undefined;
  events.round = () => onRound?.();
  const nextRound = () => new Promise<void>((resolve) => (onRound = resolve));
  return { log, events, nextRound };
}

describe('LeaseKeeper deadlines', () => {
  it('counts a lease’s local deadline from when the request was sent, not from the slow answer', async () => {
    const clock = new ManualClock(START);
    const fake = fakeTable(clock);
    const { log, events, nextRound } = recorder();
    // 15 s lease: writing must stop 3 s (a fifth) before it, 12 s after the request was sent.
    const keeper = new LeaseKeeper({
      table: fake.table,
      instanceId: 'a',
      leaseMs: 15_000,
      tenants: () => ['acme'],
      events,
      clock,
    });
    fake.slowAnswers(4_000); // each statement answers 4 s after it was sent
    const first = nextRound();
    keeper.start();
    await first;
    expect(log).toEqual(['acquired acme@1']);
    // heartbeat, release, live, list took 16 s: the acquire was sent at +16 s and answered at +20 s.
    expect(keeper.validUntil('acme')).toBe(START + 16_000 + 12_000);

    const fence = keeper.fence('acme');
    fake.hangAnswers(); // the database goes silent: no renewal ever answers
    await clock.advanceTo(START + 28_000 - 1);
    expect(keeper.canWrite('acme')).toBe(true);
    await clock.advance(1);
    expect(keeper.canWrite('acme')).toBe(false);
    expect(log[1]).toMatch(/^lost acme: not renewed before its local deadline/);
    // The fence refuses without asking the database (the fake client would throw if it were used).
    await expect(fence.check({} as never, 'BEGIN')).rejects.toMatchObject({ code: 'LEASE_LOST' });
    expect(() => keeper.fence('acme')).toThrow(/a does not hold it/);
  });

  it('the margin is at least 1 s and at most half the lease', async () => {
    for (const [leaseMs, validMs] of [
      [3_000, 2_000],
      [15_000, 12_000],
      [1_000, 500],
    ] as const) {
      const clock = new ManualClock(START);
      const { events, nextRound } = recorder();
      const keeper = new LeaseKeeper({
        table: fakeTable(clock).table,
        instanceId: 'a',
        leaseMs,
        tenants: () => ['t'],
        events,
        clock,
      });
      const first = nextRound();
      keeper.start();
      await first;
      expect(keeper.validUntil('t'), `lease ${leaseMs} ms`).toBe(START + validMs);
      await keeper.stop();
    }
  });

  it('keeps renewing though a listener throws, and stop() reports, releases and retires once', async () => {
    const clock = new ManualClock(START);
    const fake = fakeTable(clock);
    const { log, events, nextRound } = recorder({
      acquired: () => {
        throw new Error('a broken listener');
      },
    });
    const keeper = new LeaseKeeper({
      table: fake.table,
      instanceId: 'a',
      leaseMs: 15_000,
      tenants: () => ['acme', 'hooli'],
      events,
      clock,
    });
    const first = nextRound();
    keeper.start();
    await first;
    const second = nextRound();
    await clock.advance(5_000);
    await second;
    expect(keeper.validUntil('acme')).toBe(START + 5_000 + 12_000);
    await Promise.all([keeper.stop(), keeper.stop()]);
    await keeper.stop();
    expect(log.sort()).toEqual(['lost acme: this replica is stopping', 'lost hooli: this replica is stopping']);
    expect(fake.calls.sort()).toEqual(['release acme', 'release hooli', 'retire a']);
    expect(keeper.canWrite('acme')).toBe(false);
  });
  it('a fence refused past the local deadline gives the lease up then, though a late renewal answers before the timer', async () => {
    // An event loop stalled past the deadline (SIGSTOP, a long pause) runs its I/O callbacks (a
    // write's fence check, a renewal's answer) before its due timers. The refused write stops the
    // tenant's runtime; the keeper must not keep renewing a lease nobody runs here.
    let now = START;
    const sleepers: { wakeAt: number; resolve: () => void }[] = [];
    const clock = {
      now: () => now,
      sleep: (ms: number, signal?: AbortSignal) =>
        new Promise<void>((resolve, reject) => {
          sleepers.push({ wakeAt: now + ms, resolve });
          signal?.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
        }),
    };
    const runTimers = async (): Promise<void> => {
      for (const sleeper of sleepers.splice(0)) {
        if (sleeper.wakeAt <= now) sleeper.resolve();
        else sleepers.push(sleeper);
      }
      for (let i = 0; i < 20; i++) await Promise.resolve();
    };
    const fake = fakeTable(new ManualClock(START));
    let answerRenewal: (() => void) | undefined;
    const table = fake.table as unknown as Record<string, unknown>;
    const renew = table.renew as (holder: string, leases: { tenant: string; epoch: number }[]) => Promise<unknown>;
    table.renew = (holder: string, leases: { tenant: string; epoch: number }[]) =>
      new Promise((resolve) => (answerRenewal = () => resolve(renew(holder, leases))));
    const { log, events, nextRound } = recorder();
    const keeper = new LeaseKeeper({
      table: fake.table,
      instanceId: 'a',
      leaseMs: 15_000,
      tenants: () => ['acme'],
      events,
      clock,
    });
    const first = nextRound();
    keeper.start();
    await first;
    expect(keeper.validUntil('acme')).toBe(START + 12_000);
    const fence = keeper.fence('acme');
    // From now on the database credits the lease to this replica.
    table.list = () => Promise.resolve([{ tenant: 'acme', holder: 'a', epoch: 1, expiresInMs: 10_000 }]);

    now = START + 5_000;
    await runTimers(); // the second round sends its renewal, which the database answers late
    expect(answerRenewal).toBeDefined();
    now = START + 12_500; // stalled past the deadline; the deadline's timer has not run yet
    await expect(fence.check({} as never, 'BEGIN')).rejects.toMatchObject({ code: 'LEASE_LOST' });
    answerRenewal!();
    for (let i = 0; i < 20; i++) await Promise.resolve(); // the answer is taken before the timers run
    await runTimers();
    // The keeper gave the lease up (the supervisor stops the tenant) and did not keep it renewed
    // for a runtime that stopped; a later round may take it again and start the tenant afresh.
    expect(log[1]).toMatch(/^lost acme: not renewed before its local deadline/);
    await keeper.stop();
  });
});
