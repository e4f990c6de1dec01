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
}

/**
 * /readyz of the process: the store engine, then every running tenant's checks, named
 * `<tenant>/<check>` (the tenant `default` keeps the plain names of a daemon without tenants).
 * A tenant that failed to start makes the instance unready; an invalid tenant file does not (the
 * other tenants run, and the file is reported in the check's detail and in the logs).
 */
export function tenantReadiness(r: TenantReadinessInputs): ReadinessCheck[] {
  const checks: ReadinessCheck[] = [];
  if (r.backendProblem !== undefined) checks.push({ name: 'store', ok: false, detail: r.backendProblem });
  for (const runtime of r.runtimes) {
    const prefix = runtime.tenant === DEFAULT_TENANT ? '' : `${runtime.tenant}/`;
    for (const check of runtime.readiness()) checks.push({ ...check, name: `${prefix}${check.name}` });
  }
  for (const [tenant, problem] of r.startFailures)
    checks.push({ name: `${tenant}/start`, ok: false, detail: `did not start: ${problem}` });
  if (r.problems.length > 0)
    checks.push({
      name: 'tenants',
      ok: true,
      detail: r.problems.map((p) => `${p.file}: ${p.message}`).join('; '),
    });
  return checks;
}
