import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { registerSecret, scrubSecrets, scrubSteps } from '../../src/secrets/secretRegistry.js';

const key = (): string => `cf_live_${randomBytes(16).toString('hex')}`;

describe('the secret registry', () => {
  it('scrubs a secret registered after lines were already scrubbed, the longer of two whole', () => {
    const first = key();
    registerSecret(first);
    expect(scrubSecrets(`key ${first}`)).toBe('key [redacted]');
    const second = key();
    expect(scrubSecrets(`key ${second}`)).toBe(`key ${second}`);
    registerSecret(second);
    registerSecret(`${second}-suffix`);
    expect(scrubSecrets(`keys ${first} ${second} ${second}-suffix`)).toBe('keys [redacted] [redacted] [redacted]');
  });

  // Each registration rebuilt the pattern from every secret so far: 5,000 tenants' keys took
  // 12 s of CPU at the daemon's start.
  it('registers 5,000 keys in well under a second of CPU, and scrubs every one of them', () => {
    const keys = Array.from({ length: 5_000 }, key);
    const before = process.cpuUsage();
    for (const k of keys) registerSecret(k);
    const used = process.cpuUsage(before);
    expect((used.user + used.system) / 1e6).toBeLessThan(1);
    expect(scrubSecrets(`${keys[0]} ${keys[2_500]} ${keys[4_999]}`)).toBe('[redacted] [redacted] [redacted]');
  });

  // Tenants starting register their keys between log lines: one pattern of every key, rebuilt at
  // the first line after a registration, made each such line cost 215 ms of CPU at 5,000 keys.
  it('scrubs a line after each of 2,000 registrations in well under a second of CPU', () => {
    const keys = Array.from({ length: 2_000 }, key);
    const before = process.cpuUsage();
    for (const k of keys) {
      registerSecret(k);
      expect(scrubSecrets(`tenant starting with ${k}`)).toBe('tenant starting with [redacted]');
    }
    const used = process.cpuUsage(before);
    expect((used.user + used.system) / 1e6).toBeLessThan(1);
    expect(scrubSecrets(`${keys[0]}:${keys[1_999]}.`)).toBe('[redacted]:[redacted].');
  });

  // Trying each distinct length at every position of a line cost 68 s of CPU for a 64 KB line
  // with 1,000 distinct lengths; a 16 KB line keeps the run without the fix to about 17 s.
  it('scrubs a 16 KB line in well under a second of CPU with 1,000 secrets of distinct lengths', () => {
    const secrets = Array.from({ length: 1_000 }, (_, n) => `${randomBytes(2).toString('hex')}${'s'.repeat(n + 1)}`);
    for (const secret of secrets) registerSecret(secret);
    const line = `${'word '.repeat(3_275)}${secrets[999]}`;
    const before = process.cpuUsage();
    const scrubbed = scrubSecrets(line);
    const used = process.cpuUsage(before);
    expect(scrubbed).toBe(`${'word '.repeat(3_275)}[redacted]`);
    expect((used.user + used.system) / 1e6).toBeLessThan(0.25);
  });

  // Trying each length registered for the 4 characters at a position cost 7.95 s of CPU for a
  // 64 KB line of one opening repeated and 1,000 secrets of that opening: work of line x secrets
  // x length. The automata take a step or two per character of the line and automaton.
  it('scrubs a 64 KB line of an opening 1,000 secrets share in work linear in the line', () => {
    const opening = randomBytes(2).toString('hex');
    const secrets = Array.from({ length: 1_000 }, (_, n) => `${opening}${'z'.repeat(n + 1)}`);
    for (const secret of secrets) registerSecret(secret);
    const line = opening.repeat(16_384);
    const before = scrubSteps();
    expect(scrubSecrets(line)).toBe(line);
    const perCharacter = (scrubSteps() - before) / line.length;
    // At most 2 steps per character in each of the log2(secrets) automata a registration leaves.
    expect(perCharacter).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(20_000)));
    expect(scrubSecrets(`${line}${secrets[999]}.`)).toBe(`${line}[redacted].`);
  });

  it('cuts a secret that contains another whole, and the leftmost of two that overlap', () => {
    registerSecret('ab12cd34');
    registerSecret('12cd');
    registerSecret('cd34ef56');
    expect(scrubSecrets('x ab12cd34 y 12cd z')).toBe('x [redacted] y [redacted] z');
    // The leftmost match wins and the rest of the overlapping one is not a secret on its own.
    expect(scrubSecrets('ab12cd34ef56')).toBe('[redacted]ef56');
  });

  it('cuts secrets made of astral characters whole, and still redacts URL credentials', () => {
    const secret = '\u{1F511}k\u{1F511}ey';
    registerSecret(secret);
    expect(scrubSecrets(`\u{1F600}${secret}\u{1F600}`)).toBe('\u{1F600}[redacted]\u{1F600}');
    expect(scrubSecrets('postgres://user:hunter2@db/x')).not.toContain('hunter2');
  });
});
