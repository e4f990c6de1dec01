import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ConfigError } from '../errors.js';
import { PlainFileError, readPlainFile, SECRET_FILE_MAX_BYTES } from '../readPlainFile.js';
import { registerSecret } from './secretRegistry.js';

/** What to do, after readPlainFile's reason, by PlainFileError code. */
const READ_ERROR_ADVICE: Record<string, string> = {
  ENOENT: 'check the path or the secret mount',
  EACCES: 'make it readable by the user running changefeed',
  EISDIR: 'point at the file inside it',
  NOT_PLAIN_FILE: 'point at a plain file holding the secret',
  TOO_LARGE: 'point at the file holding only the secret',
};

/**
 * Reads a secret kept in its own file (a Docker or Kubernetes secret mount, a `*_FILE`
 * variable). One trailing newline is dropped because editors and `echo` add it and no service
 * expects it. A plain file of at most SECRET_FILE_MAX_BYTES (readPlainFile). Errors name the file
 * and the reason, never the content.
 */
export function readSecretFile(path: string): string {
  const absolute = resolve(path);
  const named = nameInMessages(path, absolute);
  let content: string;
  try {
    content = readPlainFile(absolute, SECRET_FILE_MAX_BYTES);
  } catch (error) {
    if (!(error instanceof PlainFileError)) throw error;
    const advice = READ_ERROR_ADVICE[error.code];
    const hint = advice === undefined ? error.reason : `${error.reason}; ${advice}`;
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
