import type { ReadinessCheck } from '../observe/healthServer.js';
import { DEFAULT_TENANT, type TenantProblem } from '../tenants/tenant.js';
import type { TenantRuntime } from './tenantRuntime.js';

export interface TenantReadinessInputs {
  runtimes: readonly TenantRuntime[];
  /** Tenants that did not start, with why. */
  startFailures: ReadonlyMap<string, string>;
  /** Invalid tenant files, duplicate keys, an unreadable directory. */
  problems: readonly TenantProblem[];
  /** The store engine could not be opened or reached. */
  backendProblem: string | undefined;
  /** Tenants from a directory: each one's checks are reported without deciding the instance's readiness. */
  isolated: boolean;
  /**
   * Why this replica's view of the tenants is not applied or not trusted: its directory read
   * empty while the store records tenants, or it lacks tenants other replicas run. Not ready.
   */
  viewProblem?: string | undefined;
}

/**
 * /readyz of the process: the store engine, then every running tenant's checks, named
 * `<tenant>/<check>` (the tenant `default` keeps the plain names of a daemon without tenants).
 *
 * Without a tenants directory the one tenant's checks decide readiness. With one they are
 * advisory: one company's revoked key or failing sink would fail every replica alike (its lease
 * moves on) and take every other tenant's feed out of a Service. Only the process's own checks
 * (store engine, leases, the view of the tenants directory) decide.
 */
export function tenantReadiness(r: TenantReadinessInputs): ReadinessCheck[] {
  const checks: ReadinessCheck[] = [];
  if (r.backendProblem !== undefined) checks.push({ name: 'store', ok: false, detail: r.backendProblem });
  if (r.viewProblem !== undefined) checks.push({ name: 'tenants-directory', ok: false, detail: r.viewProblem });
  for (const runtime of r.runtimes) {
    const prefix = runtime.tenant === DEFAULT_TENANT ? '' : `${runtime.tenant}/`;
    for (const check of runtime.readiness())
      checks.push({ ...check, name: `${prefix}${check.name}`, ...(r.isolated ? { advisory: true } : {}) });
  }
  for (const [tenant, problem] of r.startFailures)
    checks.push({
      name: `${tenant}/start`,
      ok: false,
      detail: `did not start: ${problem}`,
      ...(r.isolated ? { advisory: true } : {}),
    });
  if (r.problems.length > 0)
    checks.push({
      name: 'tenants',
      ok: true,
      detail: r.problems.map((p) => `${p.file}: ${p.message}`).join('; '),
    });
  return checks;
}
