import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError } from '../../src/errors.js';
import { PROBLEMS_LISTED } from '../../src/config/formatConfigIssues.js';
import { loadConfig } from '../../src/config/loadConfig.js';
import { listConfigSecrets } from '../../src/config/secretFields.js';
import { envMapping, sampleConfigSchema } from './fixtures/sampleConfigSchema.js';
import { useTempDir } from './tempConfigDir.js';

const API_KEY = 'key_0123456789abcdef';
const temp = useTempDir();

/** Runs `fn`, expecting a ConfigError, and returns it. */
function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError, but nothing was thrown');
}

describe('layering', () => {
  const schema = z.strictObject({
    stateDir: z.string().default('from-schema'),
    api: z
      .strictObject({ baseUrl: z.string().default('https://schema.test'), timeoutMs: z.number().default(1) })
      .prefault({}),
    logs: z.array(z.string()).default(['schema']),
  });
  const mapping = { CHANGEFEED_STATE_DIR: 'stateDir' };

  it('lets each layer win over the ones below: schema < embedded < file < env < overrides', async () => {
    const file = await temp.write('changefeed.yaml', 'stateDir: from-file\n');
    const env = { CHANGEFEED_STATE_DIR: 'from-env' };
    const embeddedDefaults = { stateDir: 'from-embedded' };
    const overrides = { stateDir: 'from-override' };

    expect(loadConfig(schema, { env: {} }).stateDir).toBe('from-schema');
    expect(loadConfig(schema, { env: {}, embeddedDefaults }).stateDir).toBe('from-embedded');
    expect(loadConfig(schema, { env: {}, embeddedDefaults, file }).stateDir).toBe('from-file');
    expect(loadConfig(schema, { env, envMapping: mapping, embeddedDefaults, file }).stateDir).toBe('from-env');
    expect(loadConfig(schema, { env, envMapping: mapping, embeddedDefaults, file, overrides }).stateDir).toBe(
      'from-override',
    );
  });

  it('merges nested objects key by key but replaces arrays', async () => {
    const file = await temp.write('changefeed.yaml', 'api:\n  timeoutMs: 5\nlogs: [career, skill]\n');
    const config = loadConfig(schema, {
      env: {},
      file,
      embeddedDefaults: { api: { baseUrl: 'https://embedded.test' }, logs: ['a', 'b', 'c'] },
      overrides: { logs: ['override'] },
    });
    expect(config.api).toEqual({ baseUrl: 'https://embedded.test', timeoutMs: 5 });
    expect(config.logs).toEqual(['override']);
  });

  it('ignores unset and empty environment variables and undefined overrides', async () => {
    const file = await temp.write('changefeed.yaml', 'stateDir: from-file\n');
    const config = loadConfig(schema, {
      env: { CHANGEFEED_STATE_DIR: '' },
      envMapping: mapping,
      file,
      overrides: { stateDir: undefined },
    });
    expect(config.stateDir).toBe('from-file');
  });

  it('turns environment strings into numbers and booleans where the schema expects them', () => {
    const typed = z.strictObject({ port: z.number().int(), pretty: z.boolean(), label: z.string() });
    const config = loadConfig(typed, {
      env: { PORT: '8080', PRETTY: 'true', LABEL: '42' },
      envMapping: { PORT: 'port', PRETTY: 'pretty', LABEL: 'label' },
    });
    expect(config).toEqual({ port: 8080, pretty: true, label: '42' });
  });

  it('reads the sample application config from file and environment with defaults filled in', async () => {
    const file = await temp.write(
      'changefeed.yaml',
      'sinks:\n  - type: stdout\n  - type: webhook\n    url: https://hooks.test/in\n    headers: { X-Team: core }\n',
    );
    const config = loadConfig(sampleConfigSchema, { file, env: { CHANGEFEED_API_KEY: API_KEY }, envMapping });
    expect(config.api).toEqual({ apiKey: API_KEY, baseUrl: 'https://api.example.test', timeoutMs: 10_000 });
    expect(config.sinks).toEqual([
      { type: 'stdout', pretty: false },
      { type: 'webhook', url: 'https://hooks.test/in', headers: { 'X-Team': 'core' } },
    ]);
    expect(config.proxy).toBeNull();
  });
});

describe('${VAR} interpolation in the file', () => {
  const schema = z.strictObject({
    api: z.strictObject({ baseUrl: z.string(), apiKey: z.string() }),
    note: z.string().optional(),
  });

  it('substitutes variables, falls back to defaults and keeps $${ as a literal ${', async () => {
    const file = await temp.write(
      'changefeed.yaml',
      'api:\n  baseUrl: "${BASE_URL:-https://default.test}/v1"\n  apiKey: ${API_KEY}\nnote: ' +
        '"cost: $${PRICE} for ${WHO:-nobody}"\n',
    );
    const config = loadConfig(schema, { file, env: { API_KEY, WHO: '' } });
    expect(config).toEqual({
      api: { baseUrl: 'https://default.test/v1', apiKey: API_KEY },
      note: 'cost: ${PRICE} for nobody',
    });
  });

  it('inserts values verbatim, so quotes and newlines in a variable cannot change the YAML', async () => {
    const file = await temp.write('changefeed.yaml', 'api:\n  baseUrl: ${BASE_URL}\n  apiKey: "${API_KEY}"\n');
    const hostile = 'x"\nnote: injected';
    const config = loadConfig(schema, { file, env: { BASE_URL: hostile, API_KEY } });
    expect(config.api.baseUrl).toBe(hostile);
    expect(config.note).toBeUndefined();
  });

  it('reports an unset variable without default naming the config path and the variable', async () => {
    const file = await temp.write('changefeed.yaml', 'api:\n  baseUrl: ${BASE_URL}\n  apiKey: ${MISSING_KEY}\n');
    const error = configError(() => loadConfig(schema, { file, env: { BASE_URL: 'https://x.test' } }));
    expect(error.message).toContain(file);
    expect(error.issues).toEqual([{ path: 'api.apiKey', message: expect.stringContaining('MISSING_KEY is not set') }]);
    expect(error.message).toContain('api.apiKey: environment variable MISSING_KEY is not set');
  });
});

describe('file errors', () => {
  it('names a missing file', () => {
    const missing = '/nonexistent/changefeed.yaml';
    const error = configError(() => loadConfig(sampleConfigSchema, { file: missing, env: {} }));
    expect(error.message).toContain(missing);
    expect(error.message).toContain('does not exist');
  });

  it('reports a YAML syntax error with file, line and column, without quoting the line', async () => {
    const file = await temp.write(
      'changefeed.yaml',
      'stateDir: ok\nlogLevel: info\napi:\n  apiKey: key_secret_material: x\n',
    );
    const error = configError(() => loadConfig(sampleConfigSchema, { file, env: {} }));
    expect(error.message).toContain(`config file ${file} is not valid YAML`);
    expect(error.message).toContain('Nested mappings are not allowed in compact mappings (line 4, column 11)');
    expect(error.issues[0]?.path).toBe(`${file}:4:11`);
    expect(error.message).not.toContain('key_secret_material');
  });

  it('reports a duplicate key as a syntax error at its line', async () => {
    const file = await temp.write('changefeed.yaml', 'stateDir: a\nstateDir: b\n');
    const error = configError(() => loadConfig(sampleConfigSchema, { file, env: {} }));
    expect(error.message).toContain('Map keys must be unique (line 2, column 1)');
  });

  it('rejects a file whose top level is not a mapping', async () => {
    const file = await temp.write('changefeed.yaml', '- a\n- b\n');
    expect(configError(() => loadConfig(sampleConfigSchema, { file, env: {} })).message).toContain('mapping');
  });
});

describe('validation errors', () => {
  it('lists every problem with nested paths, array indexes and where the value came from', async () => {
    const file = await temp.write(
      'changefeed.yaml',
      [
        'api:',
        `  apiKey: ${API_KEY}`,
        '  timeoutMs: -5',
        'sinks:',
        '  - type: stdout',
        '  - type: file',
        '    path: ""',
        '  - type: webhok',
        '',
      ].join('\n'),
    );
    const error = configError(() =>
      loadConfig(sampleConfigSchema, { file, env: { CHANGEFEED_BASE_URL: 'not a url' }, envMapping }),
    );
    const paths = error.issues.map((issue) => issue.path);
    expect(paths).toEqual(expect.arrayContaining(['api.baseUrl', 'api.timeoutMs', 'sinks[1].path', 'sinks[2].type']));
    expect(error.message).toContain(
      'api.baseUrl: Invalid URL (got "not a url" from environment variable CHANGEFEED_BASE_URL)',
    );
    expect(error.message).toContain(`api.timeoutMs: Too small: expected number to be >0 (got -5 at ${file}:3:3)`);
    expect(error.message).toMatch(/sinks\[1\]\.path: .*(got "" at .*:7:5)/);
    expect(error.message).toContain(
      'sinks[2].type: unknown type "webhok"; expected one of "stdout", "webhook", "file"; did you mean "webhook"?',
    );
  });

  it('names a missing required setting', () => {
    const error = configError(() => loadConfig(sampleConfigSchema, { env: {} }));
    expect(error.issues).toEqual([{ path: 'api', message: 'required setting is missing (expected object)' }]);
  });

  it('names unknown keys with a suggestion when a known key is within two edits', async () => {
    const file = await temp.write(
      'changefeed.yaml',
      `api:\n  apiKey: ${API_KEY}\n  baseUlr: https://x.test\nstateDri: ./s\nfrobnicate: 1\n`,
    );
    const error = configError(() => loadConfig(sampleConfigSchema, { file, env: {} }));
    expect(error.message).toContain('api.baseUlr: unknown key "baseUlr"; did you mean "baseUrl"?');
    expect(error.message).toContain('stateDri: unknown key "stateDri"; did you mean "stateDir"?');
    expect(error.message).toContain(
      'frobnicate: unknown key "frobnicate"; known keys here: api, stateDir, logLevel, proxy, logs, sinks',
    );
  });

  // A key may be as long as the file: each line took it whole, twice (path and message), a key of
  // 900 KB making a line of 1.8 MB, and its suggestion's lookup hundreds of megabytes.
  it('cuts each listed line: a key of 100,000 characters is named by its start', async () => {
    const long = (i: number): string => `${String(i)}${'k'.repeat(100_000)}`;
    const file = await temp.write(
      'changefeed.yaml',
      `api:\n  apiKey: ${API_KEY}\n${Array.from({ length: 9 }, (_, i) => `  ? ${long(i)}\n  : 1\n`).join('')}`,
    );
    const error = configError(() => loadConfig(sampleConfigSchema, { file, env: {} }));
    const lines = error.message.split('\n');
    expect(lines[0]).toBe('invalid configuration (9 problems):');
    for (const line of lines) expect(line.length).toBeLessThan(800);
    expect(lines[1]).toMatch(/^ {2}api\["0k+\.\.\. \(cut\)"?\]?.*: unknown key "0k+\.\.\.; known keys here: /);
    for (const issue of error.issues) expect(issue.path.length + issue.message.length).toBeLessThan(800);
  });

  it('scrubs a secret pasted as a key from the path it lists, not only from the message', async () => {
    const file = await temp.write('changefeed.yaml', `api:\n  apiKey: ${API_KEY}\n  ${API_KEY}: 1\n`);
    const error = configError(() => loadConfig(sampleConfigSchema, { file, env: {} }));
    expect(error.message).toContain('api.<redacted>: unknown key "<redacted>"');
    expect(error.message).not.toContain(API_KEY);
    expect(JSON.stringify(error.issues)).not.toContain(API_KEY);
  });

  // Every problem was listed: 80,000 unknown keys (330 sinks of 250) made a message of 11 MB.
  it('lists the first PROBLEMS_LISTED problems and says how many more there are', async () => {
    const sink = (i: number): string =>
      `  - type: webhook\n    url: https://x.test\n${Array.from({ length: 20 }, (_, k) => `    junk${i}_${k}: 1\n`).join('')}`;
    const file = await temp.write(
      'changefeed.yaml',
      `api:\n  apiKey: ${API_KEY}\nsinks:\n${Array.from({ length: 30 }, (_, i) => sink(i)).join('')}`,
    );
    const error = configError(() => loadConfig(sampleConfigSchema, { file, env: {} }));
    expect(error.issues).toHaveLength(PROBLEMS_LISTED);
    const lines = error.message.split('\n');
    expect(lines[0]).toBe(`invalid configuration (${PROBLEMS_LISTED} problems listed):`);
    expect(lines[1]).toContain('sinks[0].junk0_0: unknown key "junk0_0"');
    expect(lines).toHaveLength(PROBLEMS_LISTED + 2);
    expect(lines.at(-1)).toBe(`  ... and up to ${600 - PROBLEMS_LISTED} more, not listed: fix these and check again`);
  });

  it('suggests keys of the sink variant the entry selects', async () => {
    const file = await temp.write(
      'changefeed.yaml',
      `api:\n  apiKey: ${API_KEY}\nsinks:\n  - type: webhook\n    url: https://x.test\n    header: {}\n`,
    );
    const error = configError(() => loadConfig(sampleConfigSchema, { file, env: {} }));
    expect(error.issues).toEqual([
      { path: 'sinks[0].header', message: expect.stringContaining('did you mean "headers"?') },
    ]);
  });
});

describe('secrets in errors', () => {
  it('shows <redacted> instead of the value of a field described as Secret:', async () => {
    const secret = 'whsec_short';
    const file = await temp.write(
      'changefeed.yaml',
      `api:\n  apiKey: ${API_KEY}\nsinks:\n  - type: webhook\n    url: https://x.test\n    secret: \${SIGNING}\n`,
    );
    const error = configError(() => loadConfig(sampleConfigSchema, { file, env: { SIGNING: secret } }));
    expect(error.issues).toEqual([{ path: 'sinks[0].secret', message: expect.stringContaining('got <redacted>') }]);
    expect(error.message).not.toContain(secret);
  });

  it('never shows an API key, even when a custom message quotes it', () => {
    const badKey = 'nope_this_is_the_secret_key';
    const error = configError(() =>
      loadConfig(sampleConfigSchema, { env: { CHANGEFEED_API_KEY: badKey }, envMapping }),
    );
    expect(error.message).toContain(
      'api.apiKey: API key <redacted> must start with key_ (got <redacted> from environment ' +
        'variable CHANGEFEED_API_KEY)',
    );
    expect(error.message).not.toContain(badKey);
    expect(JSON.stringify(error.issues)).not.toContain(badKey);
  });

  it('treats fields named password, token or secret as secret without a description', async () => {
    const schema = z.strictObject({ db: z.strictObject({ password: z.string().min(30), token: z.number() }) });
    const file = await temp.write('changefeed.yaml', 'db:\n  password: hunter2hunter2\n  token: abcdefghij\n');
    const error = configError(() => loadConfig(schema, { file, env: {} }));
    expect(error.issues.map((i) => i.path)).toEqual(['db.password', 'db.token']);
    expect(error.message).not.toContain('hunter2hunter2');
    expect(error.message).not.toContain('abcdefghij');
  });
});

describe('listConfigSecrets', () => {
  it('lists the values of every secret field of a loaded config, and nothing else', async () => {
    const signing = 'whsec_0123456789abcdefghijklmn';
    const file = await temp.write(
      'changefeed.yaml',
      `sinks:\n  - type: webhook\n    url: https://x.test\n    secret: ${signing}\nproxy:\n  url: http://proxy.test\n  password: proxy-pw\n`,
    );
    const config = loadConfig(sampleConfigSchema, { file, env: { CHANGEFEED_API_KEY: API_KEY }, envMapping });
    expect(listConfigSecrets(sampleConfigSchema, config).sort()).toEqual([API_KEY, 'proxy-pw', signing].sort());
  });
});
