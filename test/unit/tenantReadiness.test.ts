import { describe, expect, it } from 'vitest';
import { tenantReadiness } from '../../src/daemon/tenantReadiness.js';
import type { TenantRuntime } from '../../src/daemon/tenantRuntime.js';
import type { ReadinessCheck } from '../../src/observe/healthServer.js';

/** What /readyz answers for these checks (the health server's rule). */
const ready = (checks: readonly ReadinessCheck[]): boolean => checks.every((c) => c.ok || c.advisory === true);

const runtime = (tenant: string, checks: ReadinessCheck[]): TenantRuntime =>
  ({ tenant, readiness: () => checks }) as unknown as TenantRuntime;

const starting = { name: 'credential', ok: false, detail: 'no answer from the service yet' };
const fine = { name: 'credential', ok: true };

describe('/readyz of a process serving tenants', () => {
  it.each([
    // [case, isolated, runtimes, start failures, backend problem, ready]
    [
      'one tenant without a directory, its key not yet answered',
      false,
      [runtime('default', [starting])],
      [],
      undefined,
      false,
    ],
    ['one tenant without a directory, all fine', false, [runtime('default', [fine])], [], undefined, true],
    [
      'a directory: one tenant still starting after a takeover',
      true,
      [runtime('a', [fine]), runtime('b', [starting])],
      [],
      undefined,
      true,
    ],
    ['a directory: one tenant failed to start', true, [runtime('a', [fine])], [['b', 'no key']], undefined, true],
    ['a directory: the store engine is away', true, [runtime('a', [fine])], [], 'PostgreSQL is unreachable', false],
    ['no directory: the tenant failed to start', false, [], [['default', 'no key']], undefined, false],
  ] as const)('%s', (_case, isolated, runtimes, startFailures, backendProblem, expected) => {
    const checks = tenantReadiness({
      runtimes,
      startFailures: new Map(startFailures),
      problems: [],
      backendProblem,
      isolated,
    });
    expect(ready(checks)).toBe(expected);
  });

  it('is not ready while its view of the tenants directory is refused or lacks tenants others run, and says why', () => {
    const checks = tenantReadiness({
      runtimes: [runtime('a', [fine])],
      startFailures: new Map(),
      problems: [],
      backendProblem: undefined,
      isolated: true,
      viewProblem: 'the tenants directory /tenants holds no tenant file',
    });
    expect(ready(checks)).toBe(false);
    expect(checks[0]).toEqual({
      name: 'tenants-directory',
      ok: false,
      detail: 'the tenants directory /tenants holds no tenant file',
    });
  });

  it('still names a failing tenant and why, under its own name', () => {
    const checks = tenantReadiness({
      runtimes: [runtime('b', [starting])],
      startFailures: new Map([['c', 'the key file is missing']]),
      problems: [],
      backendProblem: undefined,
      isolated: true,
    });
    expect(checks).toEqual([
      { name: 'b/credential', ok: false, detail: 'no answer from the service yet', advisory: true },
      { name: 'c/start', ok: false, detail: 'did not start: the key file is missing', advisory: true },
    ]);
  });
});
