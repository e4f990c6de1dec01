import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { appConfigSchema } from '../../src/config/appConfigSchema.js';
import { loadConfig } from '../../src/config/loadConfig.js';
import { MAX_MAPPING_KEYS, MAX_NESTING, readConfigFile } from '../../src/config/readConfigFile.js';
import { readTenants } from '../../src/config/readTenants.js';
import { runCliInProcess } from '../support/runCli.js';
import { runCli } from '../support/daemonProcess.js';
import { makeTempDir } from '../support/tempDir.js';

/** A config file of `text` in a fresh directory. */
function configFile(text: string, name = 'changefeed.yaml'): string {
  const file = join(makeTempDir(), name);
  writeFileSync(file, text);
  return file;
}

/** `levels` collections nested under `key`, the innermost holding 1: `key: [[[1]]]` for 3. */
const nested = (key: string, levels: number): string => `${key}: ${'['.repeat(levels)}1${']'.repeat(levels)}\n`;

describe('a config file nesting values deeper than any setting', () => {
  it('is refused naming the file, line and column, without parsing it by recursion', async () => {
    const file = configFile(nested('api', 200_000));
    // A process of its own: before the fix, V8 aborted `check` composing it (exit 134, no message).
    const check = await runCli(['check', '--config', file]);
    expect(check.stderr).toContain(
      `config file ${file} nests values more than ${MAX_NESTING} levels deep (line 1, column ${5 + MAX_NESTING})`,
    );
    expect(check.status).toBe(2);
  });

  it('is refused past the bound and read at it, through block and flow collections alike', () => {
    // The top-level mapping is one level; `api:` then nests MAX_NESTING - 1 more.
    expect(readConfigFile(configFile(nested('api', MAX_NESTING - 1))).value).toHaveProperty('api');
    expect(() => readConfigFile(configFile(nested('api', MAX_NESTING)))).toThrow(
      `nests values more than ${MAX_NESTING} levels deep (line 1, column ${5 + MAX_NESTING})`,
    );
    const dashes = configFile(`api:\n  ${'- '.repeat(MAX_NESTING)}1\n`);
    expect(() => readConfigFile(dashes)).toThrow(`nests values more than ${MAX_NESTING} levels deep (line 2`);
  });

  it('is refused when an alias inside its own anchor nests it for ever: CONFIG_INVALID, not a RangeError', async () => {
    const file = configFile('api: &api { baseUrl: "http://127.0.0.1:1", extra: *api }\n');
    expect(() => loadConfig(appConfigSchema, { file, env: {} })).toThrow(
      expect.objectContaining({
        code: 'CONFIG_INVALID',
        message: expect.stringContaining(
          `config file ${file} nests values more than ${MAX_NESTING} levels deep (under api`,
        ),
      }),
    );
    const result = await runCliInProcess(['check', '--config', file]);
    expect(result.stderr).toContain('an alias inside its own anchor nests for ever');
    expect(result.status).toBe(2);
  });

  it('sets aside a tenant file whose alias nests for ever, naming it, and runs the other tenants', () => {
    const dir = makeTempDir();
    writeFileSync(
      join(dir, 'plain.yaml'),
      'api: { baseUrl: "http://127.0.0.1:1", apiKey: k_plain_0123456789abcdef0123456 }\n',
    );
    const looping = join(dir, 'looping.yaml');
    writeFileSync(
      looping,
      'api: &a { baseUrl: "http://127.0.0.1:1", apiKey: k_loop_0123456789abcdef01234567 }\nwatch: &w [*w]\n',
    );
    const { tenants, problems } = readTenants({
      kind: 'directory',
      dir,
      env: {},
      defaults: { sinks: [{ name: 'out', type: 'stdout' }] },
      describeDefault: () => 'from the main file',
      forgetAfterMs: 0,
    });
    expect(tenants.map((t) => t.name)).toEqual(['plain']);
    expect(problems).toEqual([
      expect.objectContaining({
        code: 'CONFIG_INVALID',
        tenant: 'looping',
        message: expect.stringContaining(
          `config file ${looping} nests values more than ${MAX_NESTING} levels deep (under watch`,
        ),
      }),
    ]);
  });

  it('holding a second document is refused in words an operator reads', () => {
    const file = configFile('log: { level: info }\n---\nlog: { level: debug }\n');
    expect(() => readConfigFile(file)).toThrow(
      'the file holds a second YAML document (after "---"); keep one (line 2, column 1)',
    );
  });
});

describe('a config file with a mapping of more keys than any section has', () => {
  const keys = (count: number, indent = ''): string =>
    Array.from({ length: count }, (_, i) => `${indent}k${i}: 1\n`).join('');

  // Before the fix yaml checked each key against every earlier one, and each unknown key's message
  // looked its line up among them: 60,000 keys (600 KB) held `check` past two minutes.
  it('is refused naming the file, line and column, block or flow, and one at the bound is read', () => {
    const atBound = configFile(`extra:\n${keys(MAX_MAPPING_KEYS, '  ')}`);
    expect(readConfigFile(atBound).value.extra).toEqual(expect.objectContaining({ [`k${MAX_MAPPING_KEYS - 1}`]: 1 }));
    const block = configFile(`log: { level: info }\nextra:\n${keys(MAX_MAPPING_KEYS + 1, '  ')}`);
    expect(() => readConfigFile(block)).toThrow(
      `config file ${block} holds a mapping of more than ${MAX_MAPPING_KEYS} keys (line 3, column 3)`,
    );
    const top = configFile(keys(MAX_MAPPING_KEYS + 1));
    expect(() => readConfigFile(top)).toThrow(
      `holds a mapping of more than ${MAX_MAPPING_KEYS} keys (line 1, column 1)`,
    );
    const flow = configFile(`extra: { ${keys(MAX_MAPPING_KEYS + 1).replaceAll('\n', ', ')} }\n`);
    expect(() => readConfigFile(flow)).toThrow(
      `holds a mapping of more than ${MAX_MAPPING_KEYS} keys (line 1, column 8)`,
    );
  });

  it('is refused by `check` with exit 2, before any key is validated', async () => {
    const file = configFile(keys(5_000));
    const result = await runCliInProcess(['check', '--config', file]);
    expect(result.stderr).toContain(`config file ${file} holds a mapping of more than ${MAX_MAPPING_KEYS} keys`);
    expect(result.status).toBe(2);
  });
});
