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
 * Built when a line is scrubbed after a registration, not at each registration: 5,000 tenants
 * register 5,000 keys at start, and sorting and joining every key so far for each made the
 * start quadratic (11 s of CPU at 5,000 keys).
 */
let pattern: RegExp | undefined;
let patternStale = false;

/**
 * Registers a value to scrub from all log output from now on. Call it as soon as a secret is
 * loaded, before anything logs it. Values shorter than 4 characters are ignored.
 */
export function registerSecret(value: string): void {
  if (value.length < MIN_SECRET_LENGTH || secrets.has(value)) return;
  secrets.add(value);
  patternStale = true;
}

/** `text` with every registered secret replaced by `[redacted]`, and credentials in URLs too. */
export function scrubSecrets(text: string): string {
  const safe = redactUrlCredentials(text);
  if (secrets.size === 0 || safe.length < MIN_SECRET_LENGTH) return safe;
  if (patternStale || pattern === undefined) {
    // Longest first, so a secret that contains another is replaced whole.
    const alternatives = [...secrets].sort((a, b) => b.length - a.length).map(escapeRegExp);
    pattern = new RegExp(alternatives.join('|'), 'g');
    patternStale = false;
  }
  pattern.lastIndex = 0;
  return pattern.test(safe) ? safe.replace(pattern, REPLACEMENT) : safe;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
