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

  it('names the path of a missing file', () => {
    expect(() => readSecretFile('/nonexistent/api-key')).toThrow(ConfigError);
    expect(() => readSecretFile('/nonexistent/api-key')).toThrow(
      'cannot read secret file /nonexistent/api-key: it does not exist',
    );
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
