import { describe, expect, it } from 'vitest';
import { settleTenants } from '../../src/tenants/settleTenants.js';
import type { ScannedTenant, Tenant, TenantProblem } from '../../src/tenants/tenant.js';

/** A tenant `name` whose key is `key` (its fingerprint, here), config version `v`. */
const t = (name: string, key: string, v = 1): Tenant<number> => ({
  name,
  file: `/t/${name}.yaml`,
  config: v,
  keyFingerprint: `${key}`.padEnd(64, '0'),
});
const ok = (tenant: Tenant<number>): ScannedTenant<number> => ({ ok: true, tenant });
const invalid = (name: string): ScannedTenant<number> => {
  const problem: TenantProblem = {
    code: 'CONFIG_INVALID',
    tenant: name,
    file: `/t/${name}.yaml`,
    message: `tenant "${name}" is invalid`,
    issues: [],
  };
  return { ok: false, name, problem };
};

interface Case {
  name: string;
  previous: Tenant<number>[];
  scanned: ScannedTenant<number>[];
  /** name:version of each tenant that runs afterwards. */
  runs: string[];
  /** tenant:code of each problem. */
  problems: string[];
}

const cases: Case[] = [
  {
    name: 'distinct keys all run',
    previous: [],
    scanned: [ok(t('b', 'k2')), ok(t('a', 'k1'))],
    runs: ['a:1', 'b:1'],
    problems: [],
  },
  {
    name: 'among new tenants the first by name keeps a shared key',
    previous: [],
    scanned: [ok(t('b', 'k1')), ok(t('a', 'k1')), ok(t('c', 'k1'))],
    runs: ['a:1'],
    problems: ['b:TENANT_DUPLICATE_API_KEY', 'c:TENANT_DUPLICATE_API_KEY'],
  },
  {
    name: 'a running tenant keeps its key against a new one that comes first by name',
    previous: [t('b', 'k1')],
    scanned: [ok(t('a', 'k1')), ok(t('b', 'k1'))],
    runs: ['b:1'],
    problems: ['a:TENANT_DUPLICATE_API_KEY'],
  },
  {
    name: 'a running tenant keeps its key even while its own file is invalid',
    previous: [t('b', 'k1')],
    scanned: [ok(t('a', 'k1')), invalid('b')],
    runs: ['b:1'],
    problems: ['a:TENANT_DUPLICATE_API_KEY', 'b:CONFIG_INVALID'],
  },
  {
    name: 'a running tenant that takes a key already held keeps its last config',
    previous: [t('a', 'k1'), t('b', 'k2')],
    scanned: [ok(t('a', 'k1')), ok(t('b', 'k1', 2))],
    runs: ['a:1', 'b:1'],
    problems: ['b:TENANT_DUPLICATE_API_KEY'],
  },
  {
    name: 'an invalid file keeps a running tenant on its last config and stops nobody else',
    previous: [t('a', 'k1'), t('b', 'k2')],
    scanned: [invalid('a'), ok(t('b', 'k2', 2)), ok(t('c', 'k3'))],
    runs: ['a:1', 'b:2', 'c:1'],
    problems: ['a:CONFIG_INVALID'],
  },
  {
    name: 'an invalid new file does not start',
    previous: [],
    scanned: [invalid('a')],
    runs: [],
    problems: ['a:CONFIG_INVALID'],
  },
  {
    name: 'a removed file stops its tenant',
    previous: [t('a', 'k1'), t('b', 'k2')],
    scanned: [ok(t('b', 'k2'))],
    runs: ['b:1'],
    problems: [],
  },
  {
    name: "a removed tenant's key is free for another at once",
    previous: [t('a', 'k1')],
    scanned: [ok(t('b', 'k1'))],
    runs: ['b:1'],
    problems: [],
  },
  {
    name: 'a key given up by a running tenant is free on the next read, not the same one',
    previous: [t('a', 'k1')],
    scanned: [ok(t('a', 'k9', 2)), ok(t('b', 'k1'))],
    runs: ['a:2'],
    problems: ['b:TENANT_DUPLICATE_API_KEY'],
  },
  {
    name: 'two files for one running tenant keep it on its last config',
    previous: [t('a', 'k1')],
    scanned: [invalid('a'), invalid('a')],
    runs: ['a:1'],
    problems: ['a:CONFIG_INVALID', 'a:CONFIG_INVALID'],
  },
];

describe('settleTenants', () => {
  it.each(cases)('$name', ({ previous, scanned, runs, problems }) => {
    const settled = settleTenants(previous, scanned);
    expect(settled.tenants.map((x) => `${x.name}:${x.config}`)).toEqual(runs);
    expect(settled.problems.map((p) => `${p.tenant}:${p.code}`)).toEqual(problems);
  });

  it('converges: the tenant refused for a key its holder gave up runs on the next read', () => {
    const first = settleTenants([t('a', 'k1')], [ok(t('a', 'k9', 2)), ok(t('b', 'k1'))]);
    const second = settleTenants(first.tenants, [ok(t('a', 'k9', 2)), ok(t('b', 'k1'))]);
    expect(second.tenants.map((x) => x.name)).toEqual(['a', 'b']);
    expect(second.problems).toEqual([]);
  });

  it('says whether the refused tenant keeps running, and names both tenants but only a short fingerprint', () => {
    const [notStarted, kept] = settleTenants(
      [t('b', 'k1'), t('c', 'k2')],
      [ok(t('a', 'k1')), ok(t('b', 'k1')), ok(t('c', 'k1', 2))],
    ).problems;
    expect(notStarted?.message).toBe(
      'tenant "a" (/t/a.yaml) has the same API key (sha256 k10000000000) as tenant "b" (/t/b.yaml), ' +
        'which already runs with it; a key has one reads bucket, so give each tenant its own key; ' +
        'it does not start until this is fixed',
    );
    expect(kept?.message).toMatch(
      /^tenant "c" .* as tenant "b" .*; it keeps running with its last valid configuration$/,
    );
  });
});
