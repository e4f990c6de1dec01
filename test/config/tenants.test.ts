import { mkdirSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENV_MAPPING } from '../../src/config/appConfigSchema.js';
import { loadMainConfig } from '../../src/config/mainConfig.js';
import {
  readTenants,
  scanTenantFiles,
  settleTenantScan,
  type TenantConfigMemo,
  type TenantScan,
} from '../../src/config/readTenants.js';
import { diffTenants } from '../../src/tenants/diffTenants.js';
import { TENANT_SECTIONS } from '../../src/config/tenantConfigSchema.js';
import { ConfigError } from '../../src/errors.js';
import { makeTempDir } from '../support/tempDir.js';

const MAIN = ['api:', '  baseUrl: https://skills.example.com', '  timeoutMs: 20000', 'watch:', '  overlapSeconds: 120'];
const SINKS = 'sinks: [{ name: out, type: stdout }]';

/** A main config file (lines) with `tenants.dir` set to a fresh directory; `tenant` writes a tenant file. */
function setup(mainLines: string[] = [...MAIN, SINKS]) {
  const root = makeTempDir();
  const dir = join(root, 'tenants');
  mkdirSync(dir);
  const mainFile = join(root, 'changefeed.yaml');
  writeFileSync(mainFile, [...mainLines, `stateDir: ${join(root, 'state')}`, `tenants: { dir: ${dir} }`].join('\n'));
  const tenant = (name: string, lines: string[]): string => {
    const path = join(dir, name);
    writeFileSync(path, lines.join('\n'));
    return path;
  };
  const load = (env: NodeJS.ProcessEnv = {}) => loadMainConfig({ file: mainFile, env, envMapping: { ...ENV_MAPPING } });
  return { root, dir, mainFile, tenant, load };
}

describe('without tenants.dir', () => {
  it('makes the one tenant "default" from the main config, as before tenants existed', () => {
    const root = makeTempDir();
    const file = join(root, 'changefeed.yaml');
    writeFileSync(file, ['api: { baseUrl: https://skills.example.com, apiKey: key-default-0001 }', SINKS].join('\n'));
    const main = loadMainConfig({ file, env: {} });
    expect(main.tenants.kind).toBe('main');
    const { tenants, problems } = readTenants(main.tenants);
    expect(problems).toEqual([]);
    expect(tenants.map((t) => [t.name, t.file])).toEqual([['default', undefined]]);
    expect(tenants[0]?.config.api.apiKey).toBe('key-default-0001');
    expect(tenants[0]?.config.watch.overlapSeconds).toBe(300);
    // The tenant sections, and the main file's feed tokens: the tenant `default`'s own.
    expect(Object.keys(tenants[0]?.config ?? {}).sort()).toEqual([...TENANT_SECTIONS, 'feed'].sort());
    expect(main.process.stateDir).toBe('state');
    expect(main.process.tenants.rescanSeconds).toBe(5);
  });

  it('still requires api and sinks, and reports every problem of the file at once', () => {
    const root = makeTempDir();
    const file = join(root, 'changefeed.yaml');
    writeFileSync(file, 'http: { port: -1 }\ntenants: { rescanSeconds: 0 }\n');
    const error = (() => {
      try {
        loadMainConfig({ file, env: {} });
      } catch (e) {
        return e as ConfigError;
      }
      throw new Error('expected a ConfigError');
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.issues.map((i) => i.path).sort()).toEqual(['api', 'http.port', 'sinks', 'tenants.rescanSeconds']);
  });
});

describe('with tenants.dir', () => {
  it('merges each tenant file over the main file: objects key by key, lists replace', () => {
    const t = setup();
    t.tenant('acme.yaml', ['api: { apiKey: key-acme-0001 }', 'watch: { concurrency: 4 }']);
    t.tenant('globex.yml', [
      'api: { apiKey: key-globex-0001, baseUrl: https://other.example.com }',
      'sinks: [{ name: a, type: stdout }, { name: b, type: stdout }]',
      'journal: { retentionDays: 1 }',
    ]);
    const main = t.load();
    expect(main.process.stateDir).toBe(join(t.root, 'state'));
    const { tenants, problems } = readTenants(main.tenants);
    expect(problems).toEqual([]);
    const [acme, globex] = tenants;
    expect(acme?.name).toBe('acme');
    expect(acme?.file).toBe(join(t.dir, 'acme.yaml'));
    expect(acme?.config.api).toMatchObject({ baseUrl: 'https://skills.example.com', timeoutMs: 20000 });
    expect(acme?.config.watch).toMatchObject({ overlapSeconds: 120, concurrency: 4 });
    expect(acme?.config.sinks.map((s) => s.name)).toEqual(['out']);
    expect(globex?.name).toBe('globex');
    expect(globex?.config.api.baseUrl).toBe('https://other.example.com');
    expect(globex?.config.sinks.map((s) => s.name)).toEqual(['a', 'b']);
    expect(globex?.config.journal.retentionDays).toBe(1);
    expect(globex?.config.watch.overlapSeconds).toBe(120);
  });

  it('takes the directory from CHANGEFEED_TENANTS_DIR', () => {
    const root = makeTempDir();
    const file = join(root, 'changefeed.yaml');
    writeFileSync(file, SINKS);
    writeFileSync(join(root, 'acme.yaml'), 'api: { baseUrl: https://skills.example.com, apiKey: key-acme-0001 }');
    const main = loadMainConfig({ file, env: { CHANGEFEED_TENANTS_DIR: root }, envMapping: { ...ENV_MAPPING } });
    expect(main.tenants.kind).toBe('directory');
    expect(readTenants(main.tenants).tenants.map((t) => t.name)).toEqual(['acme']);
  });

  it('lets the main file leave out api and sinks, but not hold a key every tenant would share', () => {
    const t = setup(['watch: { overlapSeconds: 60 }']);
    t.tenant('acme.yaml', [
      'api: { baseUrl: https://skills.example.com, apiKey: key-acme-0001 }',
      'sinks: [{ name: out, type: stdout }]',
    ]);
    expect(readTenants(t.load().tenants).tenants.map((t) => t.name)).toEqual(['acme']);

    const shared = setup(['api: { apiKey: shared-key-0001 }', SINKS]);
    expect(() => shared.load()).toThrow(/api\.apiKey: with tenants\.dir set, each tenant file sets its own/);
    expect(() => shared.load()).not.toThrow(/shared-key-0001/);
    expect(() => setup([SINKS]).load({ CHANGEFEED_API_KEY: 'env-key-0001' })).toThrow(/unset CHANGEFEED_API_KEY/);
  });

  it("validates the main file's tenant sections as defaults, pointing at its lines", () => {
    const t = setup(['watch:', '  overlapSeconds: -5', SINKS]);
    expect(() => t.load()).toThrow(new RegExp(`watch\\.overlapSeconds: .*at ${t.mainFile}:2:3`));
  });

  it('reports an invalid tenant file by file, setting and line, and still loads the others', () => {
    const t = setup();
    t.tenant('acme.yaml', ['api: { apiKey: key-acme-0001 }']);
    const bad = t.tenant('broken.yaml', ['api:', '  apiKey: key-broken-secret-0001', 'watch:', '  concurrency: 99']);
    const { tenants, problems } = readTenants(t.load().tenants);
    expect(tenants.map((x) => x.name)).toEqual(['acme']);
    expect(problems).toHaveLength(1);
    const [problem] = problems;
    expect(problem).toMatchObject({ code: 'CONFIG_INVALID', tenant: 'broken', file: bad });
    expect(problem?.message).toContain(bad);
    expect(problem?.message).toMatch(new RegExp(`watch\\.concurrency: .*at ${bad}:4:3`));
    expect(problem?.message).toContain('does not start until this is fixed');
    expect(problem?.issues.map((i) => i.path)).toEqual(['watch.concurrency']);
    expect(JSON.stringify(problems)).not.toContain('key-broken-secret-0001');
  });

  it('names the tenant file when a setting is still missing once merged', () => {
    const t = setup(['api: { baseUrl: https://skills.example.com }']);
    const file = t.tenant('acme.yaml', ['api: { apiKey: key-acme-0001 }']);
    const [problem] = readTenants(t.load().tenants).problems;
    expect(problem?.message).toContain(`tenant "acme" (${file})`);
    expect(problem?.message).toContain('sinks: required setting is missing');
  });

  it('shows a secret setting of an invalid tenant file as <redacted>', () => {
    const t = setup();
    const file = t.tenant('both.yaml', ['api:', '  apiKey: key-both-secret-0001', '  apiKeyFile: /run/key']);
    const [problem] = readTenants(t.load().tenants).problems;
    expect(problem?.message).toContain(`api.apiKey: set exactly one of`);
    expect(problem?.message).toContain(`got <redacted> at ${file}:2:3`);
    expect(JSON.stringify(problem)).not.toContain('key-both-secret-0001');
  });

  it('reports YAML syntax errors and unset variables without quoting the file', () => {
    const t = setup();
    const yaml = t.tenant('syntax.yaml', ['api: { apiKey: "key-syntax-0001 }']);
    const vars = t.tenant('vars.yaml', ['api: { apiKey: "${ACME_KEY}" }']);
    const { problems } = readTenants(t.load().tenants);
    expect(problems.map((p) => [p.tenant, p.file])).toEqual([
      ['syntax', yaml],
      ['vars', vars],
    ]);
    expect(problems[0]?.message).toMatch(/not valid YAML/);
    expect(problems[0]?.message).not.toContain('key-syntax-0001');
    expect(problems[1]?.message).toContain('environment variable ACME_KEY is not set');
  });

  it('reports a tenant file of too many YAML aliases as invalid, and still loads the others', () => {
    const t = setup();
    t.tenant('acme.yaml', ['api: { apiKey: key-acme-0001 }']);
    // Each anchor repeats the one before ten times: 10^11 nodes once expanded.
    const lines = ['a0: &a0 [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i <= 10; i++)
      lines.push(
        `a${i}: &a${i} [${Array(10)
          .fill(`*a${i - 1}`)
          .join(', ')}]`,
      );
    const bomb = t.tenant('bomb.yaml', ['api: { apiKey: key-bomb-0001 }', ...lines]);
    const { tenants, problems } = readTenants(t.load().tenants);
    expect(tenants.map((x) => x.name)).toEqual(['acme']);
    expect(problems.map((p) => [p.code, p.tenant, p.file])).toEqual([['CONFIG_INVALID', 'bomb', bomb]]);
    expect(problems[0]?.message).toMatch(/aliases/);
  });

  it('interpolates ${VAR} in tenant files and reads a key from api.apiKeyFile', () => {
    const t = setup();
    const keyFile = join(t.root, 'globex.key');
    writeFileSync(keyFile, 'key-globex-0001\n');
    t.tenant('acme.yaml', ['api: { apiKey: "${ACME_KEY}" }']);
    t.tenant('globex.yaml', [`api: { apiKeyFile: ${keyFile} }`]);
    // The same key inline and in a file is one key.
    t.tenant('initech.yaml', ['api: { apiKey: key-globex-0001 }']);
    const { tenants, problems } = readTenants(t.load({ ACME_KEY: 'key-acme-0001' }).tenants);
    expect(tenants.map((x) => x.name)).toEqual(['acme', 'globex']);
    expect(tenants[0]?.config.api.apiKey).toBe('key-acme-0001');
    expect(problems.map((p) => [p.code, p.tenant])).toEqual([['TENANT_DUPLICATE_API_KEY', 'initech']]);
  });

  it('refuses a second tenant with the same key, naming both files but not the key', () => {
    const t = setup();
    const a = t.tenant('acme.yaml', ['api: { apiKey: key-same-0001 }']);
    const b = t.tenant('beta.yaml', ['api: { apiKey: key-same-0001 }']);
    const { tenants, problems } = readTenants(t.load().tenants);
    expect(tenants.map((x) => x.name)).toEqual(['acme']);
    expect(problems).toHaveLength(1);
    expect(problems[0]?.message).toContain(`tenant "beta" (${b})`);
    expect(problems[0]?.message).toContain(`tenant "acme" (${a})`);
    expect(problems[0]?.message).toMatch(/sha256 [0-9a-f]{12}\)/);
    expect(problems[0]?.message).not.toContain('key-same-0001');
  });

  it('skips dotfiles, ..data, subdirectories and other files; follows ConfigMap links; checks names', () => {
    const t = setup();
    const data = join(t.dir, '..2026_11_24_15_00_00.000000001');
    mkdirSync(data);
    writeFileSync(join(data, 'acme.yaml'), 'api: { apiKey: key-acme-0001 }');
    symlinkSync('..2026_11_24_15_00_00.000000001', join(t.dir, '..data'));
    symlinkSync(join('..data', 'acme.yaml'), join(t.dir, 'acme.yaml'));
    symlinkSync(join('..data', 'gone.yaml'), join(t.dir, 'gone.yaml'));
    mkdirSync(join(t.dir, 'sub.yaml'));
    t.tenant('.hidden.yaml', ['api: { apiKey: key-hidden-0001 }']);
    t.tenant('README.md', ['not a tenant']);
    const upper = t.tenant('Acme2.yaml', ['api: { apiKey: key-upper-0001 }']);
    t.tenant('dup.yaml', ['api: { apiKey: key-dup-0001 }']);
    t.tenant('dup.yml', ['api: { apiKey: key-dup-0002 }']);
    const { tenants, problems } = readTenants(t.load().tenants);
    expect(tenants.map((x) => x.name)).toEqual(['acme']);
    expect(problems.map((p) => [p.code, p.tenant ?? p.file])).toEqual([
      ['TENANT_NAME_INVALID', upper],
      ['TENANT_NAME_INVALID', 'dup'],
      ['TENANT_NAME_INVALID', 'dup'],
    ]);
  });

  it('keeps the running tenants when the directory cannot be read, and says so', () => {
    const t = setup();
    t.tenant('acme.yaml', ['api: { apiKey: key-acme-0001 }']);
    const source = t.load().tenants;
    const first = readTenants(source);
    const gone = readTenants({ ...source, dir: join(t.root, 'missing') } as typeof source, first.tenants);
    expect(gone.tenants).toEqual(first.tenants);
    expect(gone.problems.map((p) => p.code)).toEqual(['TENANTS_DIR_UNREADABLE']);
    expect(gone.problems[0]?.message).toContain('does not exist');
  });

  it('refuses a read that finds no tenant file while the store records tenants: nothing stops, no record changes', () => {
    const t = setup();
    const source = t.load().tenants;
    if (source.kind !== 'directory') throw new Error('a directory source');
    const acme = t.tenant('acme.yaml', ['api: { apiKey: key-acme-0001 }']);
    const records = [{ tenant: 'acme', keyFingerprint: 'f'.repeat(64), fileText: 'api: { apiKey: key-acme-0001 }' }];
    const first = settleTenantScan(source, scanTenantFiles(source), [], records);
    rmSync(acme);
    const empty = settleTenantScan(source, scanTenantFiles(source), first.tenants, records);
    expect(empty.tenants).toEqual(first.tenants);
    expect(empty.changes).toEqual({ put: [], markMissing: [], remove: [] });
    expect(empty.problems.map((p) => p.code)).toEqual(['TENANTS_DIR_EMPTY']);
    expect(empty.problems[0]?.message).toContain('holds no tenant file, while the store records 1 tenants (acme)');
    // Without records an empty directory is simply empty: nothing to protect.
    expect(settleTenantScan(source, scanTenantFiles(source), [], []).problems).toEqual([]);
  });
  it('takes the config of a file read again unchanged as it was, and validates a changed one again', () => {
    const t = setup();
    const source = t.load().tenants;
    if (source.kind !== 'directory') throw new Error('a directory source');
    const keyFile = join(t.root, 'globex.key');
    writeFileSync(keyFile, 'key-globex-0001\n');
    const acme = t.tenant('acme.yaml', ['api: { apiKey: key-acme-0001 }']);
    t.tenant('globex.yaml', [`api: { apiKeyFile: ${keyFile} }`]);
    const memo: TenantConfigMemo = new Map();
    const tenantsOf = (scan: TenantScan) => (scan.ok ? scan.scanned.flatMap((s) => (s.ok ? [s.tenant] : [])) : []);
    const [acme1, globex1] = tenantsOf(scanTenantFiles(source, memo));
    writeFileSync(keyFile, 'key-globex-0002\n');
    const [acme2, globex2] = tenantsOf(scanTenantFiles(source, memo));
    expect(acme2?.config).toBe(acme1?.config);
    expect(globex2?.config).toBe(globex1?.config);
    // A key file changes without its tenant file: its fingerprint is taken again.
    expect(globex2?.keyFingerprint).not.toBe(globex1?.keyFingerprint);
    expect(
      diffTenants(
        [acme1, globex1].flatMap((x) => x ?? []),
        [acme2, globex2].flatMap((x) => x ?? []),
      ),
    ).toEqual({ added: [], changed: [], removed: [] });
    writeFileSync(acme, 'api: { apiKey: key-acme-0001 }\nwatch: { overlapSeconds: 60 }');
    const [acme3] = tenantsOf(scanTenantFiles(source, memo));
    expect(acme3?.config).not.toBe(acme1?.config);
    expect(acme3?.config.watch.overlapSeconds).toBe(60);
    rmSync(acme);
    scanTenantFiles(source, memo);
    expect([...memo.keys()]).toEqual([join(t.dir, 'globex.yaml')]);
  });

  it('reads again only files whose stat moved, or that changed too recently for their times to tell', () => {
    const t = setup();
    const source = t.load().tenants;
    if (source.kind !== 'directory') throw new Error('a directory source');
    const acme = t.tenant('acme.yaml', ['api: { apiKey: key-acme-0001 }']);
    t.tenant('globex.yaml', ['api: { apiKey: key-globex-0001 }']);
    const memo: TenantConfigMemo = new Map();
    const minuteLater = () => Date.now() + 60_000;

    // Just written: within the time resolution, so read on every scan (a same-size rewrite in the
    // same tick would keep its stat).
    scanTenantFiles(source, memo);
    const recent = memo.get(acme);
    expect(recent?.settled).toBe(false);
    scanTenantFiles(source, memo);
    expect(memo.get(acme)).not.toBe(recent);

    // Scanned a minute later: read once more, then taken from memory while the stat stays.
    scanTenantFiles(source, memo, minuteLater());
    const settled = memo.get(acme);
    expect(settled?.settled).toBe(true);
    const scan = scanTenantFiles(source, memo, minuteLater());
    expect(memo.get(acme)).toBe(settled);
    expect(scan.ok && scan.scanned.map((s) => s.ok && s.tenant.config)).toEqual([
      settled?.config,
      memo.get(join(t.dir, 'globex.yaml'))?.config,
    ]);

    // A same-size rewrite whose modification time is put back: its change time still moves.
    const sameSize = 'api: { apiKey: key-acme-0002 }';
    const { atime, mtime } = statSync(acme);
    writeFileSync(acme, sameSize);
    utimesSync(acme, atime, mtime);
    scanTenantFiles(source, memo, minuteLater());
    expect(memo.get(acme)?.text).toBe(sameSize);
  });
});
