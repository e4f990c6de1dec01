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
 * For each opening of a registered secret (its first 4 characters), the distinct lengths of the
 * secrets that open so, longest first. A line is scrubbed by looking up the 4 characters at each
 * position and, only where some secret opens so, the text of each of those lengths in `secrets`:
 * trying every distinct length at every position cost 68 s of CPU for a 64 KB line with 1,000
 * distinct lengths, and one pattern of every secret costs 215 ms to rebuild at 5,000 keys.
 */
const lengthsByOpening = new Map<string, number[]>();

/**
 * Registers a value to scrub from all log output from now on. Call it as soon as a secret is
 * loaded, before anything logs it. Values shorter than 4 characters are ignored.
 */
export function registerSecret(value: string): void {
  if (value.length < MIN_SECRET_LENGTH || secrets.has(value)) return;
  secrets.add(value);
  const opening = value.slice(0, MIN_SECRET_LENGTH);
  const lengths = lengthsByOpening.get(opening);
  if (lengths === undefined) lengthsByOpening.set(opening, [value.length]);
  else if (!lengths.includes(value.length)) {
    lengths.push(value.length);
    lengths.sort((a, b) => b - a);
  }
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
    const lengths = lengthsByOpening.get(safe.slice(at, at + MIN_SECRET_LENGTH));
    const length = lengths?.find((n) => at + n <= safe.length && secrets.has(safe.slice(at, at + n)));
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
