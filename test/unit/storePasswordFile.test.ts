import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkStorePassword } from '../../src/cli/storePasswordCheck.js';
import { ConfigError } from '../../src/errors.js';
import { connectionUrl } from '../../src/store/postgres/postgresStoreBackend.js';
import { StoreError } from '../../src/store/storeError.js';
import { storeConfigSchema } from '../../src/store/storeConfig.js';
import { storeLocation } from '../../src/store/storeLocation.js';
import { withUrlPassword } from '../../src/secrets/urlCredentials.js';
import { makeTempDir } from '../support/tempDir.js';

describe('store.passwordFile in the config', () => {
  const cases: { store: Record<string, unknown>; refused?: string }[] = [
    { store: { url: 'postgres://changefeed@db:5432/cf', passwordFile: '/run/secrets/pw' } },
    { store: { url: 'postgresql://changefeed@db/cf?sslmode=verify-full', passwordFile: '/run/secrets/pw' } },
    { store: { url: 'postgres://changefeed:inline@db/cf' } },
    {
      store: { url: 'postgres://changefeed:inline@db/cf', passwordFile: '/run/secrets/pw' },
      refused: 'either in url or in passwordFile',
    },
    { store: { url: 'sqlite:state/cf.sqlite', passwordFile: '/run/secrets/pw' }, refused: 'needs a postgres:// url' },
    { store: { passwordFile: '/run/secrets/pw' }, refused: 'needs a postgres:// url' },
    { store: { url: 'postgres://db/cf', passwordFile: '/run/secrets/pw' }, refused: 'needs a user in url' },
    { store: { url: 'postgres://changefeed@db/cf', passwordFile: '' }, refused: 'Too small' },
  ];
  for (const { store, refused } of cases)
    it(`${refused ? 'refuses' : 'accepts'} ${JSON.stringify(store)}`, () => {
      const parsed = storeConfigSchema.safeParse(store);
      if (refused === undefined) expect(parsed.error?.issues ?? []).toEqual([]);
      else expect(parsed.error?.issues.map((i) => i.message).join('; ')).toContain(refused);
    });

  it('is carried by the store location, apart from the URL', () => {
    const store = storeConfigSchema.parse({ url: 'postgres://changefeed@db/cf', passwordFile: '/run/secrets/pw' });
    expect(storeLocation({ stateDir: 'state', store })).toMatchObject({
      kind: 'postgres',
      url: 'postgres://changefeed@db/cf',
      passwordFile: '/run/secrets/pw',
    });
  });
});

describe('withUrlPassword', () => {
  const cases: { url: string; password: string; expected: string }[] = [
    { url: 'postgres://cf@db:5432/cf', password: 's3cret', expected: 'postgres://cf:s3cret@db:5432/cf' },
    // Characters that would end the userinfo, or start an escape, are percent-encoded.
    { url: 'postgres://cf@db/cf', password: 'a@b:c/d%41#?', expected: 'postgres://cf:a%40b%3Ac%2Fd%2541%23%3F@db/cf' },
    {
      url: 'postgres://cf@db/cf?sslmode=verify-full',
      password: 'p w',
      expected: 'postgres://cf:p%20w@db/cf?sslmode=verify-full',
    },
  ];
  for (const { url, password, expected } of cases)
    it(`puts ${JSON.stringify(password)} into ${url}`, () => {
      const combined = withUrlPassword(url, password);
      expect(combined).toBe(expected);
      expect(decodeURIComponent(new URL(combined).password)).toBe(password);
    });
});

describe('connectionUrl: the URL the store connects with', () => {
  it('carries the password from the file (one trailing newline dropped)', () => {
    const file = join(makeTempDir(), 'store-password');
    writeFileSync(file, 'pa:ss@word%\n');
    const url = connectionUrl(
      { url: 'postgres://cf@127.0.0.1:5432/test', passwordFile: file, schema: 's', maxConnections: 2 },
      '',
    );
    expect(new URL(url).username).toBe('cf');
    expect(decodeURIComponent(new URL(url).password)).toBe('pa:ss@word%');
  });

  it('is the configured URL without a password file', () => {
    const url = 'postgres://cf:inline@127.0.0.1/test';
    expect(connectionUrl({ url, schema: 's', maxConnections: 2 }, '')).toBe(url);
  });

  it('names a missing file, never a password', () => {
    const file = join(makeTempDir(), 'absent');
    expect(() =>
      connectionUrl({ url: 'postgres://cf@db/cf', passwordFile: file, schema: 's', maxConnections: 2 }, ''),
    ).toThrow(ConfigError);
    expect(() =>
      connectionUrl({ url: 'postgres://cf@db/cf', passwordFile: file, schema: 's', maxConnections: 2 }, ''),
    ).toThrow(/cannot read secret file .*absent: it does not exist/);
  });

  it('refuses a URL that carries a password of its own (a location built without the config check)', () => {
    const file = join(makeTempDir(), 'store-password');
    writeFileSync(file, 'from-file');
    const location = { url: 'postgres://cf:inline@db/cf', passwordFile: file, schema: 's', maxConnections: 2 };
    expect(() => connectionUrl(location, 'postgres://<redacted>@db/cf')).toThrow(StoreError);
    expect(() => connectionUrl(location, 'postgres://<redacted>@db/cf')).toThrow(/keep one/);
  });
});

describe('changefeed check: the store password file', () => {
  const check = (passwordFile: string | undefined) =>
    checkStorePassword({
      store: storeConfigSchema.parse({ url: 'postgres://cf@db/cf', ...(passwordFile ? { passwordFile } : {}) }),
    });

  it('says nothing without a password file', () => {
    expect(check(undefined)).toBeUndefined();
  });

  it('passes on a readable file, naming it and not its content', () => {
    const file = join(makeTempDir(), 'store-password');
    writeFileSync(file, 'Secret-Content\n');
    const result = check(file);
    expect(result).toMatchObject({ ok: true, detail: `read from ${file} (store.passwordFile)` });
    expect(JSON.stringify(result)).not.toContain('Secret-Content');
  });

  it('fails on a missing or empty file, saying what to fix', () => {
    const dir = makeTempDir();
    writeFileSync(join(dir, 'empty'), '');
    expect(check(join(dir, 'absent'))).toMatchObject({ ok: false, detail: expect.stringContaining('does not exist') });
    expect(check(join(dir, 'empty'))).toMatchObject({ ok: false, detail: expect.stringContaining('is empty') });
    expect(check(dir)?.fix).toBe('check store.passwordFile and the secret mount');
  });
});
