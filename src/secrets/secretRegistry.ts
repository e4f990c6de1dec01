/**
 * Secret strings known at runtime (the API key, sink signing secrets) that must be cut out of
 * every log line wherever they appear, whatever key they sit under. Process-wide on purpose:
 * a secret is secret for every logger, including child loggers created before it was loaded.
 */

import { SecretAutomaton } from './secretAutomaton.js';
import { redactUrlCredentials } from './urlCredentials.js';

const REPLACEMENT = '[redacted]';

// Shorter values would cut ordinary words and numbers out of every line, and a credential
// that short is not worth the damage.
const MIN_SECRET_LENGTH = 4;

const secrets = new Set<string>();
/**
 * The secrets as a few automata, the largest first, each more than twice the size of the next
 * (the logarithmic method): a registration rebuilds only the small ones, so n keys cost
 * O(n log n) to build, not O(n^2) for one automaton rebuilt per key, and a line is scanned once
 * per automaton (a dozen at 5,000 keys), never once per secret.
 */
const automata: SecretAutomaton[] = [];
/**
 * Steps lines took in automata beyond the first since the last merge, against the UTF-16 units
 * of all secrets: once the extra scans have cost as much as building one automaton of all, they
 * are merged into one, so a daemon whose secrets stopped changing scans each line once.
 */
let extraSteps = 0;
let secretUnits = 0;

/**
 * Registers a value to scrub from all log output from now on. Call it as soon as a secret is
 * loaded, before anything logs it. Values shorter than 4 characters are ignored.
 */
export function registerSecret(value: string): void {
  if (value.length < MIN_SECRET_LENGTH || secrets.has(value)) return;
  secrets.add(value);
  secretUnits += value.length;
  let merged = [value];
  while (automata.length > 0 && automata[automata.length - 1]!.secrets.length <= 2 * merged.length)
    merged = [...automata.pop()!.secrets, ...merged];
  automata.push(new SecretAutomaton(merged));
}

/**
 * `text` with every registered secret replaced by `[redacted]`, and credentials in URLs too.
 * Left to right, the longest secret at a position first, so a secret that contains another is
 * replaced whole; secrets that overlap are replaced as one.
 */
export function scrubSecrets(text: string): string {
  const safe = redactUrlCredentials(text);
  if (secrets.size === 0 || safe.length < MIN_SECRET_LENGTH) return safe;
  if (automata.length > 1 && extraSteps >= secretUnits) {
    automata.splice(0, automata.length, new SecretAutomaton([...secrets]));
    extraSteps = 0;
  }
  const found = new Map<number, number>();
  automata.forEach((automaton, index) => {
    const steps = automaton.longestStarts(safe, found);
    if (index > 0) extraSteps += steps;
  });
  if (found.size === 0) return safe;
  let scrubbed = '';
  let copiedTo = 0;
  for (const at of [...found.keys()].sort((a, b) => a - b)) {
    const end = at + found.get(at)!;
    // A secret starting inside the one cut before it: what reaches past that one goes too, or
    // the rest of an overlapping secret would be logged.
    if (at < copiedTo) copiedTo = Math.max(copiedTo, end);
    else {
      scrubbed += `${safe.slice(copiedTo, at)}${REPLACEMENT}`;
      copiedTo = end;
    }
  }
  return scrubbed + safe.slice(copiedTo);
}
