import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ConfigError } from '../errors.js';
import { registerSecret } from './secretRegistry.js';

const READ_ERROR_HINTS: Record<string, string> = {
  ENOENT: 'it does not exist; check the path or the secret mount',
  EACCES: 'permission denied; make it readable by the user running changefeed',
  EISDIR: 'it is a directory; point at the file inside it',
};

/**
 * Reads a secret kept in its own file (a Docker or Kubernetes secret mount, a `*_FILE`
 * variable). One trailing newline is dropped because editors and `echo` add it and no service
 * expects it. Errors name the file and the reason, never the content.
 */
export function readSecretFile(path: string): string {
  const absolute = resolve(path);
  const named = nameInMessages(path, absolute);
  let content: string;
  try {
    content = readFileSync(absolute, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
    const hint = READ_ERROR_HINTS[code] ?? code;
    throw new ConfigError(`cannot read secret file ${named}: ${hint}`, [{ path: named, message: hint }]);
  }
  const secret = content.replace(/\r?\n$/, '');
  if (secret.trim() === '') {
    const message = 'the file is empty; write the secret into it';
    throw new ConfigError(`secret file ${named} is empty; write the secret into it`, [{ path: named, message }]);
  }
  return secret;
}

/**
 * A secret given inline, or else read from its file (`password` or `passwordFile`), registered to
 * be scrubbed from logs; undefined with neither.
 */
export function inlineOrFileSecret(inline: string | undefined, file: string | undefined): string | undefined {
  const secret = inline ?? (file === undefined ? undefined : readSecretFile(file));
  if (secret !== undefined) registerSecret(secret);
  return secret;
}

/**
 * How messages name a secret file. A value without a directory, or whose directory does not exist,
 * is withheld: a key pasted where its file's path belongs (`apiKeyFile: sk_live_...`, or a base64
 * `whsec_...` or password, which hold slashes) would otherwise be printed in clear by every command
 * that reports the problem, whereas a mounted secret sits in a directory that is there.
 */
function nameInMessages(path: string, absolute: string): string {
  if (!/[\\/]/.test(path)) return '(a name without a directory, not shown: it may be a pasted secret)';
  return existsSync(dirname(absolute))
    ? absolute
    : '(a name whose directory does not exist, not shown: it may be a pasted secret)';
}
