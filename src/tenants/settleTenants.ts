import { compareNames } from './tenantDirectory.js';
import { shortFingerprint, type ScannedTenant, type Tenant, type TenantProblem, type TenantSet } from './tenant.js';

/**
 * Decides which tenants run after a read of the tenants directory, from the tenants running
 * before (`previous`) and what the files say now (`scanned`). Pure: the watcher and `changefeed
 * tenants list` both call it.
 *
 * - A valid file runs with its new config, unless its API key is taken: a key has one reads
 *   bucket, so two tenants never share one. A tenant already running keeps its key for as long
 *   as its file exists; among the others the first by name wins. The loser gets a problem naming
 *   both tenants and files, and the key only by a short sha256 fingerprint.
 * - A tenant whose file is now invalid (or loses its key) keeps running with its last valid
 *   config and is reported; one that never ran does not start. A typo in one file must not stop a
 *   company's feed, nor anybody else's.
 * - A tenant whose file is gone is not in the result: it stops.
 *
 * A key moving from one running tenant to another takes two reads (the old holder first lets go),
 * and two running tenants swapping keys are both refused until one of them changes again.
 */
export function settleTenants<C>(previous: readonly Tenant<C>[], scanned: readonly ScannedTenant<C>[]): TenantSet<C> {
  const nameOf = (s: ScannedTenant<C>): string => (s.ok ? s.tenant.name : s.name);
  const present = new Set(scanned.map(nameOf));
  const running = new Map(previous.map((t) => [t.name, t]));
  const reserved = new Map<string, Tenant<C>>();
  for (const tenant of previous) if (present.has(tenant.name)) reserved.set(tenant.keyFingerprint, tenant);

  const accepted = new Map<string, Tenant<C>>();
  const claimed = new Map<string, Tenant<C>>();
  const problems: TenantProblem[] = [];
  const refused = new Set<string>();
  const refuse = (name: string, problem: TenantProblem): void => {
    const outcome = running.has(name)
      ? 'it keeps running with its last valid configuration'
      : 'it does not start until this is fixed';
    // A multi-line message lists settings; the outcome then gets a line of its own after them.
    const message = problem.message.includes('\n')
      ? `${problem.message}\n  (${outcome})`
      : `${problem.message}; ${outcome}`;
    problems.push({ ...problem, message });
    refused.add(name);
  };

  for (const entry of [...scanned].sort((a, b) => compareNames(nameOf(a), nameOf(b)))) {
    if (!entry.ok) {
      refuse(entry.name, entry.problem);
      continue;
    }
    const tenant = entry.tenant;
    const holder = reserved.get(tenant.keyFingerprint);
    const owner = holder !== undefined && holder.name !== tenant.name ? holder : claimed.get(tenant.keyFingerprint);
    if (owner !== undefined) {
      refuse(tenant.name, duplicateKey(tenant, owner, owner === holder));
      continue;
    }
    accepted.set(tenant.name, tenant);
    claimed.set(tenant.keyFingerprint, tenant);
  }

  // Refused tenants that were running keep their last config; their key was reserved for them.
  for (const name of refused) {
    const before = running.get(name);
    if (before !== undefined && !accepted.has(name)) accepted.set(name, before);
  }
  const tenants = [...accepted.values()].sort((a, b) => compareNames(a.name, b.name));
  return { tenants, problems };
}

function duplicateKey<C>(tenant: Tenant<C>, owner: Tenant<C>, ownerRuns: boolean): TenantProblem {
  const where = (t: Tenant<C>): string => (t.file === undefined ? 'the main config' : t.file);
  const why = ownerRuns ? 'which already runs with it' : 'which comes first by name';
  const message =
    `tenant "${tenant.name}" (${where(tenant)}) has the same API key (sha256 ${shortFingerprint(tenant.keyFingerprint)}) ` +
    `as tenant "${owner.name}" (${where(owner)}), ${why}; a key has one reads bucket, so give each tenant its own key`;
  return { code: 'TENANT_DUPLICATE_API_KEY', tenant: tenant.name, file: where(tenant), message, issues: [] };
}
