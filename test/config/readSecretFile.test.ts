import { describe, expect, it } from 'vitest';
import { readSecretFile } from '../../src/secrets/readSecretFile.js';
import { ConfigError } from '../../src/errors.js';
import { useTempDir } from './tempConfigDir.js';

const temp = useTempDir();

describe('readSecretFile', () => {
  it('returns the content without the trailing newline an editor adds', async () => {
    expect(readSecretFile(await temp.write('key', 'sk_live_abc\n'))).toBe('sk_live_abc');
    expect(readSecretFile(await temp.write('crlf', 'sk_live_abc\r\n'))).toBe('sk_live_abc');
    expect(readSecretFile(await temp.write('bare', 'sk_live_abc'))).toBe('sk_live_abc');
  });

  it('keeps inner whitespace and only drops one newline', async () => {
    expect(readSecretFile(await temp.write('key', ' a b \n\n'))).toBe(' a b \n');
  });

  it('names the path of a missing file in a directory that is there', async () => {
    await temp.write('other', 'x');
    const missing = temp.path('api-key');
    expect(() => readSecretFile(missing)).toThrow(ConfigError);
    expect(() => readSecretFile(missing)).toThrow(`cannot read secret file ${missing}: it does not exist`);
  });

  it('does not name a path whose directory does not exist: it may be a base64 secret, slashes and all', () => {
    const pasted = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw/Bd4Y+Qf8s0=';
    expect(() => readSecretFile(pasted)).toThrow(/cannot read secret file .*: it does not exist/);
    expect(() => readSecretFile(pasted)).not.toThrow(/MfKQ9r8G|Bd4Y/);
  });

  it('does not name a file without a directory: it may be a key pasted in place of its path', () => {
    expect(() => readSecretFile('sk_live_pasted_0123')).toThrow(ConfigError);
    expect(() => readSecretFile('sk_live_pasted_0123')).toThrow(/cannot read secret file .*: it does not exist/);
    expect(() => readSecretFile('sk_live_pasted_0123')).not.toThrow(/sk_live/);
  });

  it('rejects an empty or blank file, naming the path', async () => {
    const empty = await temp.write('empty', '\n');
    expect(() => readSecretFile(empty)).toThrow(`secret file ${empty} is empty`);
    const blank = await temp.write('blank', '   \n');
    expect(() => readSecretFile(blank)).toThrow(ConfigError);
  });

  it('rejects a directory without echoing anything but the path', async () => {
    await temp.write('inside', 'x');
    const dir = temp.path('');
    expect(() => readSecretFile(dir)).toThrow(/it is a directory/);
  });
});
