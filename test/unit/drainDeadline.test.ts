import { describe, expect, it } from 'vitest';
import { drainWithinMs } from '../../src/daemon/drainDeadline.js';

describe('drainWithinMs', () => {
  it.each([
    { case: 'SQLite, the default shutdown timeout', shutdownTimeoutMs: 20_000, leaseMs: undefined, drainMs: 10_000 },
    { case: 'SQLite, a short shutdown timeout', shutdownTimeoutMs: 4_000, leaseMs: undefined, drainMs: 2_000 },
    {
      case: 'PostgreSQL, the default lease under the default timeout',
      shutdownTimeoutMs: 20_000,
      leaseMs: 15_000,
      drainMs: 7_500,
    },
    {
      case: 'PostgreSQL, a long lease: the timeout bounds it',
      shutdownTimeoutMs: 20_000,
      leaseMs: 60_000,
      drainMs: 10_000,
    },
    { case: 'PostgreSQL, a short lease', shutdownTimeoutMs: 20_000, leaseMs: 6_000, drainMs: 3_000 },
    { case: 'a zero shutdown timeout: no drain', shutdownTimeoutMs: 0, leaseMs: 15_000, drainMs: 0 },
  ])('$case: $drainMs ms', ({ shutdownTimeoutMs, leaseMs, drainMs }) => {
    expect(drainWithinMs({ shutdownTimeoutMs, leaseMs })).toBe(drainMs);
  });
});
