import type { Tenant } from './tenant.js';
import { compareNames } from './tenantDirectory.js';

/** How the running tenants change from one read of the configuration to the next. Names, sorted. */
export interface TenantsDiff {
  readonly added: readonly string[];
  /** Still there with a different resolved config (or a different file). */
  readonly changed: readonly string[];
  readonly removed: readonly string[];
}

/**
 * Compares two sets of tenants by name; a tenant changed when its resolved config or its file
 * differs, compared as canonical JSON (object keys sorted), so the order of keys in a YAML file
 * never counts as a change. A new key in the same `api.apiKeyFile` is no change: the key
 * provider re-reads the file by itself.
 */
export function diffTenants<C>(previous: readonly Tenant<C>[], next: readonly Tenant<C>[]): TenantsDiff {
  const before = new Map(previous.map((t) => [t.name, t]));
  const after = new Map(next.map((t) => [t.name, t]));
  const added: string[] = [];
  const changed: string[] = [];
  for (const [name, tenant] of after) {
    const old = before.get(name);
    if (old === undefined) added.push(name);
    else if (!sameConfig(old, tenant)) changed.push(name);
  }
  const removed = [...before.keys()].filter((name) => !after.has(name));
  return { added: added.sort(compareNames), changed: changed.sort(compareNames), removed: removed.sort(compareNames) };
}

export function tenantsDiffered(diff: TenantsDiff): boolean {
  return diff.added.length + diff.changed.length + diff.removed.length > 0;
}

// The same config object (a file read unchanged, readTenants' memo) needs no comparison: at
// thousands of tenants, rendering each twice as JSON on every rescan cost more than the rest.
function sameConfig<C>(a: Tenant<C>, b: Tenant<C>): boolean {
  if (a.file === b.file && a.config === b.config) return true;
  return tenantIdentity(a) === tenantIdentity(b);
}

function tenantIdentity<C>(tenant: Tenant<C>): string {
  return canonicalJson({ file: tenant.file ?? null, config: tenant.config });
}

/**
 * JSON with the keys of every object sorted and `undefined` members left out, so two values
 * that mean the same config give the same text.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) => {
    if (item === null || typeof item !== 'object' || Array.isArray(item)) return item;
    const record = item as Record<string, unknown>;
    return Object.fromEntries(
      Object.keys(record)
        .sort()
        .map((k) => [k, record[k]]),
    );
  });
}
