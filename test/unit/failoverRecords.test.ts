import { describe, expect, it } from 'vitest';
import {
  distribution,
  overlaps,
  requestsAfterKill,
  takeovers,
  type InstanceRequest,
} from '../../bench/cases/failoverRecords.js';

const req = (
  at: number,
  company: number,
  instanceId: string,
  path = '/api/v1/careers/c1/activity',
): InstanceRequest => ({
  at,
  company,
  instanceId,
  path,
  status: 200,
});

describe('the failover bench reads the request record', () => {
  it("finds each orphan's last request by the killed replica and the survivor's first request and first poll", () => {
    const record = [
      req(1_000, 0, 'a'),
      req(2_000, 0, 'a'),
      req(1_500, 1, 'b'),
      req(20_000, 0, 'c', '/api/v1/ping'),
      req(24_000, 0, 'c', '/api/v1/careers'),
      req(28_000, 0, 'c', '/api/v1/identity-provider-events'),
    ];
    const found = takeovers(record, [0], 'a', 5_000);
    expect(found.get(0)).toEqual({
      company: 0,
      lastByKilledAt: 2_000,
      firstRequestAt: 20_000,
      firstPollAt: 28_000,
      newHolder: 'c',
    });
  });

  it('leaves a tenant nobody took over without a first request', () => {
    expect(takeovers([req(1_000, 0, 'a')], [0], 'a', 5_000).get(0)?.firstRequestAt).toBeUndefined();
  });

  it('counts requests of the killed replica after the kill', () => {
    expect(requestsAfterKill([req(1_000, 0, 'a'), req(6_000, 0, 'a')], 'a', 5_000)).toBe(1);
  });

  it('flags a replica polling a company again within a lease of another beginning, not one a lease later', () => {
    const back = [req(0, 0, 'a'), req(1_000, 0, 'b'), req(5_000, 0, 'a')];
    expect(overlaps(back, 15_000)).toHaveLength(1);
    const later = [req(0, 0, 'a'), req(1_000, 0, 'b'), req(17_000, 0, 'a')];
    expect(overlaps(later, 15_000)).toEqual([]);
  });

  it('summarises durations in seconds by nearest rank', () => {
    const ms = Array.from({ length: 20 }, (_, i) => (i + 1) * 1000);
    expect(distribution(ms)).toEqual({ count: 20, min: 1, median: 10, p95: 19, max: 20 });
  });
});
