import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { type Clock, type SleepSignal } from '../../src/clock.js';
import { ManualClock } from '../support/manualClock.js';
import { guardedClient, startCountingService, type CountingService } from '../support/countingService.js';
import { connectLeaseAdmin, createLeaseSchema, type LeaseSchema } from '../support/leaseDatabase.js';
import { KeeperSet } from '../support/leaseKeepers.js';

const admin: pg.Client | undefined = await connectLeaseAdmin('the request guard tests');
let db: LeaseSchema | undefined;
let set: KeeperSet | undefined;
let service: CountingService | undefined;

afterEach(async () => {
  await set?.stopAll();
  await db?.close();
  await service?.close();
  set = undefined;
  db = undefined;
  service = undefined;
});
afterAll(async () => {
  await admin?.end();
});

/**
 * The keeper's clock after a pause (SIGSTOP, a frozen VM): time has moved on by `stalledMs`, but no
 * sleep of the keeper has ended yet, its lease deadline timer included, as when a resumed process
 * runs an I/O callback (a response that came during the pause) before its timers.
 */
class StalledClock implements Clock {
  stalledMs = 0;
  constructor(private readonly timers: ManualClock) {}
  now(): number {
    return this.timers.now() + this.stalledMs;
  }
  sleep(ms: number, signal?: SleepSignal): Promise<void> {
    return this.timers.sleep(ms, signal);
  }
}

describe.skipIf(!admin)("a tenant's requests to the service", () => {
  it('are refused before they leave once the lease is past its local deadline, though its timer has not run', async () => {
    db = await createLeaseSchema(admin!);
    set = new KeeperSet();
    const clock = new StalledClock(new ManualClock(Date.UTC(2026, 0, 1)));
    const leaseMs = 10_000;
    const a = set.add('replica-a', db.pool(), () => ['company-1'], { leaseMs, clock });
    a.start();
    await set.until('replica-a holds company-1', () => a.count('acquired') === 1);

    service = await startCountingService();
    const client = guardedClient(service.url, a.keeper.requestGuard('company-1'));
    try {
      await client.getJson('/api/v1/ping', {}, 'poll');
      expect(service.requests()).toBe(1);

      // Resumed after two leases: the deadline passed, its timer has not fired.
      clock.stalledMs = 2 * leaseMs;
      await expect(client.getJson('/api/v1/ping', {}, 'poll')).rejects.toMatchObject({ code: 'LEASE_LOST' });
      expect(service.requests()).toBe(1);
      // Refused for its deadline, the lease is given up at once, as a refused write does.
      expect(a.count('lost')).toBe(1);
      expect(a.keeper.canWrite('company-1')).toBe(false);
    } finally {
      await client.close();
    }
  });

  it('are refused once the tenant was lost and taken again at a newer epoch', async () => {
    db = await createLeaseSchema(admin!);
    set = new KeeperSet();
    const a = set.add('replica-a', db.pool(), () => ['company-1']);
    a.start();
    await set.until('replica-a holds company-1', () => a.count('acquired') === 1);
    const guard = a.keeper.requestGuard('company-1');
    expect(() => guard()).not.toThrow();
    await a.keeper.release('company-1');
    expect(() => guard()).toThrow(/LEASE_LOST|lease of tenant "company-1" lost/);
    expect(() => a.keeper.requestGuard('company-1')).toThrow(/does not hold it/);
  });
});
