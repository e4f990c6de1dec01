import { describe, expect, it } from 'vitest';
import { canonicalJson, diffTenants, tenantsDiffered, type TenantsDiff } from '../../src/tenants/diffTenants.js';
import type { Tenant } from '../../src/tenants/tenant.js';

const tenant = (name: string, config: unknown, file: string | undefined = `/t/${name}.yaml`): Tenant<unknown> => ({
  name,
  file,
  config,
  keyFingerprint: `fp-${name}`,
});

const a1 = tenant('a', { api: { baseUrl: 'https://x', timeoutMs: 1 }, sinks: ['out'] });

const cases: { name: string; previous: Tenant<unknown>[]; next: Tenant<unknown>[]; diff: TenantsDiff }[] = [
  { name: 'nothing before, nothing now', previous: [], next: [], diff: d([], [], []) },
  { name: 'first read adds everything', previous: [], next: [a1, tenant('b', {})], diff: d(['a', 'b'], [], []) },
  {
    name: 'the same config is unchanged',
    previous: [a1],
    next: [tenant('a', structuredClone(a1.config))],
    diff: d([], [], []),
  },
  {
    name: 'key order in the file does not count',
    previous: [a1],
    next: [tenant('a', { sinks: ['out'], api: { timeoutMs: 1, baseUrl: 'https://x' } })],
    diff: d([], [], []),
  },
  {
    name: 'a nested value changes',
    previous: [a1],
    next: [tenant('a', { api: { baseUrl: 'https://x', timeoutMs: 2 }, sinks: ['out'] })],
    diff: d([], ['a'], []),
  },
  {
    name: 'list order counts',
    previous: [tenant('a', { sinks: ['x', 'y'] })],
    next: [tenant('a', { sinks: ['y', 'x'] })],
    diff: d([], ['a'], []),
  },
  {
    name: 'the same config from another file (a.yml instead of a.yaml) is a change',
    previous: [a1],
    next: [tenant('a', a1.config, '/t/a.yml')],
    diff: d([], ['a'], []),
  },
  {
    name: 'a new key in the same key file is no change',
    previous: [a1],
    next: [{ ...a1, keyFingerprint: 'another' }],
    diff: d([], [], []),
  },
  {
    name: 'adds, changes, removes and keeps at once, each sorted',
    previous: [tenant('c', {}), tenant('b', 1), tenant('a', 1), tenant('z', {})],
    next: [tenant('y', {}), tenant('b', 2), tenant('a', 1), tenant('x', {})],
    diff: d(['x', 'y'], ['b'], ['c', 'z']),
  },
  { name: 'everything removed', previous: [a1], next: [], diff: d([], [], ['a']) },
];

function d(added: string[], changed: string[], removed: string[]): TenantsDiff {
  return { added, changed, removed };
}

describe('diffTenants', () => {
  it.each(cases)('$name', ({ previous, next, diff }) => {
    expect(diffTenants(previous, next)).toEqual(diff);
    expect(tenantsDiffered(diff)).toBe(diff.added.length + diff.changed.length + diff.removed.length > 0);
  });

  it('canonical JSON sorts keys at every depth and drops undefined members', () => {
    expect(canonicalJson({ b: 1, a: { d: [{ f: 1, e: 2 }], c: undefined } })).toBe('{"a":{"d":[{"e":2,"f":1}]},"b":1}');
  });
});
