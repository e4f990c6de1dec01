import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readConfigFile } from '../../src/config/readConfigFile.js';
import { readTenants } from '../../src/config/readTenants.js';
import { ConfigError } from '../../src/errors.js';
import { CONFIG_FILE_MAX_BYTES, SECRET_FILE_MAX_BYTES } from '../../src/readPlainFile.js';
import { readSecretFile } from '../../src/secrets/readSecretFile.js';
import { runBundledScript } from '../support/bundledScript.js';
import { makeTempDir } from '../support/tempDir.js';

/** What `call` (source run in a child) threw, or `read` when it returned: a FIFO must not block this process. */
async function inChild(call: string): Promise<string> {
  const child = await runBundledScript(`import { readConfigFile } from './src/config/readConfigFile.ts';
    import { readSecretFile } from './src/secrets/readSecretFile.ts';
    try { ${call}; console.log('read'); } catch (error) { console.log(error.code + ': ' + error.message); }`);
  if (child.stdout) return child.stdout;
  const ended = child.error?.message ?? (child.signal ? `killed by ${child.signal}` : `exit ${child.status}`);
  return `(the child said nothing: ${ended}; stderr: ${JSON.stringify(child.stderr)})`;
}

describe("an operator's file that is not a plain file of bounded size", () => {
  it('refuses a FIFO as the config file, naming it, instead of blocking the process', async () => {
    const fifo = join(makeTempDir(), 'changefeed.yaml');
    execFileSync('mkfifo', [fifo]);
    expect(await inChild(`readConfigFile(${JSON.stringify(fifo)})`)).toMatch(
      new RegExp(`^CONFIG_INVALID: cannot read config file ${fifo}: it is a FIFO, not a plain file`),
    );
  });

  it('refuses a FIFO as a secret file, naming it, instead of blocking the process', async () => {
    const fifo = join(makeTempDir(), 'api-key');
    execFileSync('mkfifo', [fifo]);
    expect(await inChild(`readSecretFile(${JSON.stringify(fifo)})`)).toMatch(
      new RegExp(`^CONFIG_INVALID: cannot read secret file ${fifo}: it is a FIFO, not a plain file; point at`),
    );
  });

  it('refuses a device as the config file instead of reading it until memory runs out', () => {
    expect(() => readConfigFile('/dev/zero')).toThrow(
      'cannot read config file /dev/zero: it is a device, not a plain file',
    );
  });

  it('refuses a config file larger than the bound, naming it, and reads one at the bound', () => {
    const dir = makeTempDir();
    const atBound = join(dir, 'at.yaml');
    writeFileSync(atBound, `log: { level: info }\n#${'x'.repeat(CONFIG_FILE_MAX_BYTES - 23)}\n`);
    expect(readConfigFile(atBound).value).toEqual({ log: { level: 'info' } });
    const past = join(dir, 'past.yaml');
    writeFileSync(past, `log: { level: info }\n#${'x'.repeat(CONFIG_FILE_MAX_BYTES - 22)}\n`);
    expect(() => readConfigFile(past)).toThrow(ConfigError);
    expect(() => readConfigFile(past)).toThrow(
      `cannot read config file ${past}: it holds more than ${CONFIG_FILE_MAX_BYTES} bytes`,
    );
  });

  it('refuses a secret file larger than the bound without quoting it', () => {
    const file = join(makeTempDir(), 'api-key');
    writeFileSync(file, `sk_live_${'a'.repeat(SECRET_FILE_MAX_BYTES)}`);
    expect(() => readSecretFile(file)).toThrow(
      `cannot read secret file ${file}: it holds more than ${SECRET_FILE_MAX_BYTES} bytes; point at the file holding only the secret`,
    );
    expect(() => readSecretFile(file)).not.toThrow(/aaaa/);
  });

  it('sets aside a tenant file larger than the bound, naming it, and runs the other tenants', () => {
    const dir = makeTempDir();
    const tenant = (key: string, padding = ''): string =>
      `api: { baseUrl: "http://127.0.0.1:1", apiKey: ${key} }\n${padding}`;
    writeFileSync(join(dir, 'small.yaml'), tenant('k_small_0123456789abcdef0123456789ab'));
    const big = join(dir, 'big.yaml');
    writeFileSync(big, tenant('k_big_0123456789abcdef0123456789abcd', `#${'x'.repeat(CONFIG_FILE_MAX_BYTES)}\n`));
    const { tenants, problems } = readTenants({
      kind: 'directory',
      dir,
      env: {},
      defaults: { sinks: [{ name: 'out', type: 'stdout' }] },
      describeDefault: () => 'from the main file',
      forgetAfterMs: 0,
    });
    expect(tenants.map((t) => t.name)).toEqual(['small']);
    expect(problems).toEqual([
      expect.objectContaining({
        code: 'CONFIG_INVALID',
        tenant: 'big',
        file: big,
        message: expect.stringContaining(`cannot read config file ${big}: it holds more than`),
      }),
    ]);
  });

  it('reports a tenant file swapped for a FIFO, naming it, and runs the tenant on its last valid text', () => {
    const dir = makeTempDir();
    const source = {
      kind: 'directory',
      dir,
      env: {},
      defaults: { sinks: [{ name: 'out', type: 'stdout' }] },
      describeDefault: () => 'from the main file',
      forgetAfterMs: 0,
    } as const;
    const acme = join(dir, 'acme.yaml');
    writeFileSync(acme, 'api: { baseUrl: "http://127.0.0.1:1", apiKey: k_acme_0123456789abcdef01234567 }\n');
    writeFileSync(
      join(dir, 'globex.yaml'),
      'api: { baseUrl: "http://127.0.0.1:1", apiKey: k_globex_0123456789abcdef012345 }\n',
    );
    const first = readTenants(source);
    const records = first.changes.put;
    expect(records.map((r) => r.tenant)).toEqual(['acme', 'globex']);
    rmSync(acme);
    execFileSync('mkfifo', [acme]);
    // Before the fix the FIFO was skipped as a directory is: the tenant read as removed, and stopped.
    const { tenants, problems, changes } = readTenants(source, first.tenants, records);
    expect(tenants.map((t) => t.name)).toEqual(['acme', 'globex']);
    expect(changes.markMissing).toEqual([]);
    expect(problems).toEqual([
      expect.objectContaining({
        code: 'CONFIG_INVALID',
        tenant: 'acme',
        file: acme,
        message: expect.stringContaining(`cannot read config file ${acme}: it is a FIFO, not a plain file`),
      }),
    ]);
  });
});
