import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError } from '../errors.js';

/**
 * Reads a secret kept in its own file (a Docker or Kubernetes secret mount, a `*_FILE`
 * variable). One trailing newline is dropped because editors and `echo` add it and no service
 * expects it. Errors name the file and the reason, never the content.
 */
export function readSecretFile(path: string): string {
  const absolute = resolve(path);
  let content: string;
  try {
    content = readFileSync(absolute, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
    const hint =
      code === 'ENOENT'
        ? 'it does not exist; check the path or the secret mount'
        : code === 'EACCES'
          ? 'permission denied; make it readable by the user running changefeed'
          : code === 'EISDIR'
            ? 'it is a directory; point at the file inside it'
            : code;
    throw new ConfigError(`cannot read secret file ${absolute}: ${hint}`, [{ path: absolute, message: hint }]);
  }
  const secret = content.replace(/\r?\n$/, '');
  if (secret.trim() === '') {
    const message = 'the file is empty; write the secret into it';
    throw new ConfigError(`secret file ${absolute} is empty; write the secret into it`, [{ path: absolute, message }]);
  }
  return secret;
}

/** A secret given inline, or else read from its file (`password` or `passwordFile`); undefined with neither. */
export function inlineOrFileSecret(inline: string | undefined, file: string | undefined): string | undefined {
  return inline ?? (file === undefined ? undefined : readSecretFile(file));
}
