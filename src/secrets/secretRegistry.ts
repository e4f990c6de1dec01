/**
 * Secret strings known at runtime (the API key, sink signing secrets) that must be cut out of
 * every log line wherever they appear, whatever key they sit under. Process-wide on purpose:
 * a secret is secret for every logger, including child loggers created before it was loaded.
 */

import { redactUrlCredentials } from './urlCredentials.js';

const REPLACEMENT = '[redacted]';

// Shorter values would cut ordinary words and numbers out of every line, and a credential
// that short is not worth the damage.
const MIN_SECRET_LENGTH = 4;

const secrets = new Set<string>();
/**
 * The distinct lengths of the registered secrets, longest first: a line is scrubbed by looking up,
 * at each position, the text of each of these lengths in `secrets`, so a registration costs
 * nothing later. One pattern of every secret must be rebuilt after a registration (215 ms of CPU
 * at 5,000 keys), and tenants starting register their keys between their log lines.
 */
let lengths: readonly number[] = [];

/**
 * Registers a value to scrub from all log output from now on. Call it as soon as a secret is
 * loaded, before anything logs it. Values shorter than 4 characters are ignored.
 */
export function registerSecret(value: string): void {
  if (value.length < MIN_SECRET_LENGTH || secrets.has(value)) return;
  secrets.add(value);
  if (!lengths.includes(value.length)) lengths = [...lengths, value.length].sort((a, b) => b - a);
}

/**
 * `text` with every registered secret replaced by `[redacted]`, and credentials in URLs too.
 * Left to right, the longest secret at a position first, so a secret that contains another is
 * replaced whole.
 */
export function scrubSecrets(text: string): string {
  const safe = redactUrlCredentials(text);
  if (secrets.size === 0 || safe.length < MIN_SECRET_LENGTH) return safe;
  let scrubbed = '';
  let copiedTo = 0;
  for (let at = 0; at + MIN_SECRET_LENGTH <= safe.length;) {
    const length = lengths.find((n) => at + n <= safe.length && secrets.has(safe.slice(at, at + n)));
    if (length === undefined) {
      at++;
      continue;
    }
    scrubbed += `${safe.slice(copiedTo, at)}${REPLACEMENT}`;
    at += length;
    copiedTo = at;
  }
  return copiedTo === 0 ? safe : scrubbed + safe.slice(copiedTo);
}
