import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { runCliInProcess as runCli } from '../support/runCli.js';
import { makeTempDir } from '../support/tempDir.js';

describe('changefeed tenants list', () => {
  it('lists each tenant file with its sinks and watch set, and each invalid one with its problem (exit 1)', async () => {
    const root = makeTempDir();
    const dir = join(root, 'tenants');
    mkdirSync(dir);
    const main = join(root, 'changefeed.yaml');
    writeFileSync(
      main,
      ['api: { baseUrl: https://skills.example.com }', 'sinks: [{ name: out, type: stdout }]'].join('\n'),
    );
    writeFileSync(
      join(dir, 'acme.yaml'),
      'api: { apiKey: "${ACME_KEY}" }\nwatch: { careers: { ids: [c1, c2], discover: true } }\n',
    );
    writeFileSync(join(dir, 'beta.yaml'), 'api: { apiKey: secret-beta-0001 }\nwatch:\n  concurrency: 99\n');

    const env = { CHANGEFEED_TENANTS_DIR: dir, ACME_KEY: 'secret-acme-0001' };
    const text = await runCli(['tenants', 'list', '--config', main], env);
    expect(text.status).toBe(1);
    expect(text.stdout).toContain(`tenants from ${dir}`);
    expect(text.stdout).toContain(`acme  valid  ${join(dir, 'acme.yaml')}`);
    expect(text.stdout).toContain('sinks: out (stdout)');
    expect(text.stdout).toContain('watch: careers 2 ids + discovery; skills 0 ids; identity-provider log on');
    expect(text.stdout).toContain(`beta  INVALID  ${join(dir, 'beta.yaml')}`);
    expect(text.stdout).toContain(`watch.concurrency: Too big`);
    expect(text.stdout).toContain(`${join(dir, 'beta.yaml')}:3:3`);
    expect(text.stdout + text.stderr).not.toMatch(/secret-(acme|beta)-0001/);

    const json = await runCli(['tenants', 'list', '--config', main, '--json'], env);
    const report = JSON.parse(json.stdout) as {
      dir: string;
      tenants: { name: string; valid: boolean; sinks: { name: string }[]; problems: { code: string }[] }[];
    };
    expect(report.dir).toBe(dir);
    expect(
      report.tenants.map((t) => [t.name, t.valid, t.sinks.map((s) => s.name), t.problems.map((p) => p.code)]),
    ).toEqual([
      ['acme', true, ['out'], []],
      ['beta', false, [], ['CONFIG_INVALID']],
    ]);
  });

  it('never prints a key pasted where its file belongs, nor the content of a key file', async () => {
    const root = makeTempDir();
    const dir = join(root, 'tenants');
    mkdirSync(dir);
    const main = join(root, 'changefeed.yaml');
    writeFileSync(main, 'api: { baseUrl: https://skills.example.com }\nsinks: [{ name: out, type: stdout }]\n');
    writeFileSync(join(root, 'acme-key'), 'skl_live_FROMFILE0123456789\n');
    writeFileSync(join(dir, 'acme.yaml'), `api: { apiKeyFile: ${join(root, 'acme-key')} }\n`);
    writeFileSync(join(dir, 'pasted.yaml'), 'api: { apiKeyFile: skl_live_PASTED0123456789 }\n');

    const env = { CHANGEFEED_TENANTS_DIR: dir };
    for (const json of [[], ['--json']]) {
      const out = await runCli(['tenants', 'list', '--config', main, ...json], env);
      expect(out.status).toBe(1);
      expect(out.stdout).toContain('pasted');
      expect(out.stdout).toContain('cannot read secret file');
      expect(out.stdout + out.stderr).not.toMatch(/skl_live_(PASTED|FROMFILE)/);
    }
  });

  it('refuses a SQLite store of a development build before 1.0.0, naming its version, without changing it', async () => {
    const root = makeTempDir();
    const dir = join(root, 'tenants');
    const state = join(root, 'state');
    mkdirSync(dir);
    mkdirSync(state);
    const raw = new Database(join(state, 'changefeed.sqlite'));
    raw.exec('CREATE TABLE watched_logs (log TEXT, object_id TEXT)');
    raw.pragma('user_version = 6');
    raw.close();
    const main = join(root, 'changefeed.yaml');
    writeFileSync(
      main,
      [
        'api: { baseUrl: https://skills.example.com }',
        'sinks: [{ name: out, type: stdout }]',
        `stateDir: ${state}`,
      ].join('\n'),
    );
    writeFileSync(join(dir, 'acme.yaml'), 'api: { apiKey: secret-acme-0001 }\n');
    const result = await runCli(['tenants', 'list', '--config', main], { CHANGEFEED_TENANTS_DIR: dir });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(
      /STORE_SCHEMA_PRERELEASE.*schema version 6, written by a development build before 1\.0\.0/s,
    );
    const after = new Database(join(state, 'changefeed.sqlite'), { readonly: true });
    expect(after.pragma('user_version', { simple: true })).toBe(6);
    after.close();
  });

  it('shows the one tenant "default" from the main config without tenants.dir (exit 0)', async () => {
    const root = makeTempDir();
    const main = join(root, 'changefeed.yaml');
    writeFileSync(
      main,
      ['api: { baseUrl: https://skills.example.com }', 'sinks: [{ name: out, type: file, path: out.jsonl }]'].join(
        '\n',
      ),
    );
    const result = await runCli(['tenants', 'list', '--config', main], { CHANGEFEED_API_KEY: 'secret-default-0001' });
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('default  valid  (main config)');
    expect(result.stdout).toContain('sinks: out (file)');
    expect(result.stdout).not.toContain('secret-default-0001');
  });

  it('rejects a missing action with exit 2 and the usage', async () => {
    const result = await runCli(['tenants']);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('Usage: changefeed tenants');
    expect(result.stderr).toMatch(/^\s+list \[options\]/m);
  });
});
