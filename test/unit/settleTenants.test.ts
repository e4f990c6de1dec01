import { describe, expect, it } from 'vitest';
import { settleTenants } from '../../src/tenants/settleTenants.js';
import type { ScannedTenant, Tenant, TenantProblem, TenantRecord } from '../../src/tenants/tenant.js';

/** A key fingerprint: `key` padded to 64 characters. */
const fp = (key: string): string => key.padEnd(64, '0');
/** A tenant `name` whose key is `key`, config version `v`. */
const t = (name: string, key: string, v = 1): Tenant<number> => ({
  name,
  file: `/t/${name}.yaml`,
  config: v,
  keyFingerprint: fp(key),
});
/** A valid file: its text is `<key> v<version>`, which `lastValid` below parses back. */
const ok = (name: string, key: string, v = 1): ScannedTenant<number> => ({
  ok: true,
  tenant: t(name, key, v),
  fileText: `${key} v${v}`,
});
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
/** A record of the store: `name` owns `key`, its last valid text version `v`. */
const rec = (name: string, key: string, v = 1): TenantRecord => ({
  tenant: name,
  keyFingerprint: fp(key),
  fileText: `${key} v${v}`,
});
/** tenants.forgetAfterSeconds of these cases, in ms. */
const FORGET_AFTER_MS = 60_000;
/** The record of `name` whose file has been missing for `ms`. */
const missing = (name: string, key: string, ms: number): TenantRecord => ({ ...rec(name, key), missingForMs: ms });
/** The stored text validated again; `bad` in it stands for a text no longer valid. */
const lastValid = (record: TenantRecord): ScannedTenant<number> => {
  const [key = '', version = ''] = record.fileText.split(' ');
  return key === 'bad' ? invalid(record.tenant) : ok(record.tenant, key, Number(version.slice(1)));
};

interface Case {
  name: string;
  scanned: ScannedTenant<number>[];
  records: TenantRecord[];
  /** name:version of each tenant that runs afterwards. */
  runs: string[];
  /** tenant:code of each problem. */
  problems: string[];
  /** The records written (tenant:key:version), marked missing, and removed afterwards. */
  put: string[];
  markMissing?: string[];
  remove: string[];
}

const cases: Case[] = [
  {
    name: 'distinct new keys all run and are recorded',
    scanned: [ok('b', 'k2'), ok('a', 'k1')],
    records: [],
    runs: ['a:1', 'b:1'],
    problems: [],
    put: ['a:k1:1', 'b:k2:1'],
    remove: [],
  },
  {
    name: 'among claims of a key nobody owns, the first by name wins',
    scanned: [ok('b', 'k1'), ok('a', 'k1'), ok('c', 'k1')],
    records: [],
    runs: ['a:1'],
    problems: ['b:TENANT_DUPLICATE_API_KEY', 'c:TENANT_DUPLICATE_API_KEY'],
    put: ['a:k1:1'],
    remove: [],
  },
  {
    name: 'the recorded owner keeps its key against a copy that comes first by name (any replica, any history)',
    scanned: [ok('a0', 'k0'), ok('t0', 'k0'), ok('t1', 'k1')],
    records: [rec('t0', 'k0'), rec('t1', 'k1')],
    runs: ['t0:1', 't1:1'],
    problems: ['a0:TENANT_DUPLICATE_API_KEY'],
    put: [],
    remove: [],
  },
  {
    name: 'the owner keeps its key while its own file is invalid, running on its stored text',
    scanned: [ok('a', 'k1'), invalid('b')],
    records: [rec('b', 'k1')],
    runs: ['b:1'],
    problems: ['a:TENANT_DUPLICATE_API_KEY', 'b:CONFIG_INVALID'],
    put: [],
    remove: [],
  },
  {
    name: 'an invalid file runs on its stored text, and stops nobody else',
    scanned: [invalid('a'), ok('b', 'k2', 2), ok('c', 'k3')],
    records: [rec('a', 'k1'), rec('b', 'k2')],
    runs: ['a:1', 'b:2', 'c:1'],
    problems: ['a:CONFIG_INVALID'],
    put: ['b:k2:2', 'c:k3:1'],
    remove: [],
  },
  {
    name: 'an invalid file without a record does not start',
    scanned: [invalid('a')],
    records: [],
    runs: [],
    problems: ['a:CONFIG_INVALID'],
    put: [],
    remove: [],
  },
  {
    name: 'an invalid file whose stored text no longer validates does not start',
    scanned: [invalid('a')],
    records: [{ tenant: 'a', keyFingerprint: fp('k1'), fileText: 'bad v1' }],
    runs: [],
    problems: ['a:CONFIG_INVALID'],
    put: [],
    remove: [],
  },
  {
    name: 'a tenant that takes a key another owns keeps running on its stored text and key',
    scanned: [ok('a', 'k1'), ok('b', 'k1', 2)],
    records: [rec('a', 'k1'), rec('b', 'k2')],
    runs: ['a:1', 'b:1'],
    problems: ['b:TENANT_DUPLICATE_API_KEY'],
    put: [],
    remove: [],
  },
  {
    name: 'a key changed to a free one is recorded',
    scanned: [ok('a', 'k9', 2)],
    records: [rec('a', 'k1')],
    runs: ['a:2'],
    problems: [],
    put: ['a:k9:2'],
    remove: [],
  },
  {
    name: 'a removed file stops its tenant; its record stays, marked missing on the first read that misses it',
    scanned: [ok('b', 'k2')],
    records: [rec('a', 'k1'), rec('b', 'k2')],
    runs: ['b:1'],
    problems: [],
    put: [],
    markMissing: ['a'],
    remove: [],
  },
  {
    name: 'a record missing for less than tenants.forgetAfterSeconds stays, and is not marked again',
    scanned: [ok('b', 'k2')],
    records: [missing('a', 'k1', FORGET_AFTER_MS - 1), rec('b', 'k2')],
    runs: ['b:1'],
    problems: [],
    put: [],
    remove: [],
  },
  {
    name: 'a record missing for tenants.forgetAfterSeconds goes',
    scanned: [ok('b', 'k2')],
    records: [missing('a', 'k1', FORGET_AFTER_MS), rec('b', 'k2')],
    runs: ['b:1'],
    problems: [],
    put: [],
    remove: ['a'],
  },
  {
    name: 'a file back before it is forgotten carries on, its mark cleared',
    scanned: [ok('a', 'k1')],
    records: [missing('a', 'k1', FORGET_AFTER_MS - 1)],
    runs: ['a:1'],
    problems: [],
    put: ['a:k1:1'],
    remove: [],
  },
  {
    name: 'an invalid file back before it is forgotten runs on its stored text, its mark cleared',
    scanned: [invalid('a')],
    records: [missing('a', 'k1', FORGET_AFTER_MS - 1)],
    runs: ['a:1'],
    problems: ['a:CONFIG_INVALID'],
    put: ['a:k1:1'],
    remove: [],
  },
  {
    name: 'the key of a tenant missing but not forgotten is still its own: a copy first by name is refused',
    scanned: [ok('a-copy', 'k1')],
    records: [missing('t1', 'k1', FORGET_AFTER_MS - 1)],
    runs: [],
    problems: ['a-copy:TENANT_KEY_OF_REMOVED_TENANT'],
    put: [],
    remove: [],
  },
  {
    name: 'a record missing for long is kept while a file holds its key (a rename stays refused)',
    scanned: [ok('acme', 'k1')],
    records: [missing('company-0', 'k1', 10 * FORGET_AFTER_MS)],
    runs: [],
    problems: ['acme:TENANT_KEY_OF_REMOVED_TENANT'],
    put: [],
    remove: [],
  },
  {
    name: 'a rename (the owner gone, its key in a new file) is refused, and the owner record kept',
    scanned: [ok('acme', 'k1')],
    records: [rec('company-0', 'k1')],
    runs: [],
    problems: ['acme:TENANT_KEY_OF_REMOVED_TENANT'],
    put: [],
    markMissing: ['company-0'],
    remove: [],
  },
  {
    name: 'a key given up by its owner is free on the next read, not the same one',
    scanned: [ok('a', 'k9', 2), ok('b', 'k1')],
    records: [rec('a', 'k1')],
    runs: ['a:2'],
    problems: ['b:TENANT_DUPLICATE_API_KEY'],
    put: ['a:k9:2'],
    remove: [],
  },
  {
    name: 'two files for one recorded tenant keep it on its stored text',
    scanned: [invalid('a'), invalid('a')],
    records: [rec('a', 'k1')],
    runs: ['a:1'],
    problems: ['a:CONFIG_INVALID', 'a:CONFIG_INVALID'],
    put: [],
    remove: [],
  },
];

const records = (put: readonly TenantRecord[]): string[] =>
  put.map((r) => `${r.tenant}:${r.keyFingerprint.replace(/0+$/, '')}:${r.fileText.split(' v')[1]}`);

/** `settleTenants` applied to `scanned`, its changes applied to `before`: the next read's records. */
function settleAndApply(scanned: ScannedTenant<number>[], before: TenantRecord[]) {
  const settled = settleTenants(scanned, before, lastValid, FORGET_AFTER_MS);
  const after = new Map(before.map((r) => [r.tenant, r]));
  for (const name of settled.changes.remove) after.delete(name);
  for (const r of settled.changes.put) after.set(r.tenant, r);
  for (const name of settled.changes.markMissing) after.set(name, { ...after.get(name)!, missingForMs: 0 });
  return { settled, records: [...after.values()] };
}

/** `records` as a read `ms` later finds them. */
const later = (records: TenantRecord[], ms: number): TenantRecord[] =>
  records.map((r) => (r.missingForMs === undefined ? r : { ...r, missingForMs: r.missingForMs + ms }));

describe('settleTenants', () => {
  it.each(cases)('$name', (c) => {
    const { scanned, records: stored, runs, problems, put, remove } = c;
    const settled = settleTenants(scanned, stored, lastValid, FORGET_AFTER_MS);
    expect(settled.tenants.map((x) => `${x.name}:${x.config}`)).toEqual(runs);
    expect(settled.problems.map((p) => `${p.tenant}:${p.code}`)).toEqual(problems);
    expect(records(settled.changes.put)).toEqual(put);
    expect(settled.changes.markMissing).toEqual(c.markMissing ?? []);
    expect(settled.changes.remove).toEqual(remove);
  });

  it('decides from the files and the records alone: the order the files are listed in never counts', () => {
    const scanned = [ok('t0', 'k0'), ok('t1', 'k1'), ok('a0', 'k0'), invalid('t2')];
    const stored = [rec('t0', 'k0'), rec('t2', 'k2')];
    const first = settleTenants(scanned, stored, lastValid, FORGET_AFTER_MS);
    const reversed = settleTenants([...scanned].reverse(), [...stored].reverse(), lastValid, FORGET_AFTER_MS);
    expect(reversed).toEqual(first);
    expect(first.tenants.map((x) => x.name)).toEqual(['t0', 't1', 't2']);
  });

  it('converges: the tenant refused for a key its owner gave up runs on the next read', () => {
    const scanned = [ok('a', 'k9', 2), ok('b', 'k1')];
    const first = settleAndApply(scanned, [rec('a', 'k1')]);
    const second = settleAndApply(scanned, first.records);
    expect(second.settled.tenants.map((x) => x.name)).toEqual(['a', 'b']);
    expect(second.settled.problems).toEqual([]);
  });

  it('a rename refused until the new file goes and the old tenant is forgotten, then the key is free for a fresh start', () => {
    const refused = settleAndApply([ok('acme', 'k1')], [rec('company-0', 'k1')]);
    expect(refused.records).toEqual([missing('company-0', 'k1', 0)]);
    const stillRefused = settleAndApply([ok('acme', 'k1')], later(refused.records, 10 * FORGET_AFTER_MS));
    expect(stillRefused.settled.tenants).toEqual([]);
    expect(stillRefused.records).toEqual([missing('company-0', 'k1', 10 * FORGET_AFTER_MS)]);
    // The new file removed: kept while not yet forgotten, then gone.
    expect(settleAndApply([], later(refused.records, FORGET_AFTER_MS - 1)).records).toHaveLength(1);
    const forgotten = settleAndApply([], later(refused.records, FORGET_AFTER_MS));
    expect(forgotten.records).toEqual([]);
    const fresh = settleAndApply([ok('acme', 'k1')], forgotten.records);
    expect(fresh.settled.tenants.map((x) => x.name)).toEqual(['acme']);
    // Named back, the owner carries on with its record (and its history in the store), unmarked.
    const back = settleAndApply([ok('company-0', 'k1')], later(refused.records, 1_000));
    expect(back.settled.tenants.map((x) => x.name)).toEqual(['company-0']);
    expect(back.records).toEqual([rec('company-0', 'k1')]);
  });

  it('records what the store holds after the changes, for the lease deal', () => {
    const settled = settleTenants(
      [ok('b', 'k2'), ok('c', 'k3')],
      [rec('a', 'k1'), missing('d', 'k4', FORGET_AFTER_MS), rec('b', 'k2')],
      lastValid,
      FORGET_AFTER_MS,
    );
    expect(settled.recorded).toEqual(['a', 'b', 'c']);
  });

  it('says whether the refused tenant keeps running, names both tenants, and the key only by a short fingerprint', () => {
    const [notStarted, kept] = settleTenants(
      [ok('a', 'k1'), ok('b', 'k1'), ok('c', 'k1', 2)],
      [rec('b', 'k1'), rec('c', 'k2')],
      lastValid,
      FORGET_AFTER_MS,
    ).problems;
    expect(notStarted?.message).toBe(
      'tenant "a" (/t/a.yaml) has the same API key (sha256 k10000000000) as tenant "b" (/t/b.yaml), ' +
        'which owns it; a key has one reads bucket, so give each tenant its own key; ' +
        'it does not start until this is fixed',
    );
    expect(kept?.message).toMatch(
      /^tenant "c" .* as tenant "b" .*; it keeps running with its last valid configuration, kept in the store$/,
    );
  });

  it('leaves a record another replica wrote from another file alone and says so, but takes an edit of its own file', () => {
    // This replica recorded "k1 v1" for acme at its last read; another replica then wrote v2.
    const here = new Map([['acme', 'k1 v1']]);
    const differs = settleTenants([ok('acme', 'k1')], [rec('acme', 'k1', 2)], lastValid, FORGET_AFTER_MS, here);
    expect(differs.tenants.map((x) => `${x.name}:${x.config}`)).toEqual(['acme:1']);
    expect(differs.changes.put).toEqual([]);
    expect(differs.problems.map((p) => `${p.tenant}:${p.code}`)).toEqual(['acme:TENANT_FILE_DIFFERS']);
    expect(differs.problems[0]?.message).toMatch(/another replica reads another file for this tenant, and recorded/);
    expect(differs.recordedHere).toEqual(here);
    // With another key there, the message names both by their short fingerprints.
    const keys = settleTenants([ok('acme', 'k1')], [rec('acme', 'k9')], lastValid, FORGET_AFTER_MS, here);
    expect(keys.problems[0]?.message).toContain('with another API key (sha256 k90000000000 there, k10000000000 here)');
    // Its own file edited since (v3), or a first read: written, as ever, without a problem.
    for (const [version, recorded] of [
      [3, here],
      [1, new Map<string, string>()],
    ] as const) {
      const settled = settleTenants(
        [ok('acme', 'k1', version)],
        [rec('acme', 'k1', 2)],
        lastValid,
        FORGET_AFTER_MS,
        recorded,
      );
      const fileText = `k1 v${version}`;
      expect(settled.problems).toEqual([]);
      expect(settled.changes.put).toEqual([{ tenant: 'acme', keyFingerprint: fp('k1'), fileText }]);
      expect(settled.recordedHere).toEqual(new Map([['acme', fileText]]));
    }
  });

  it('tells how to rename without replaying the history', () => {
    const [problem] = settleTenants([ok('acme', 'k1')], [rec('company-0', 'k1')], lastValid, FORGET_AFTER_MS).problems;
    expect(problem?.message).toContain('name the file "company-0.yaml" again');
    expect(problem?.message).toContain('would read all of it again into its sinks');
  });
});
