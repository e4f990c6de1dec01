import { describe, expect, it } from 'vitest';
import { parseDuration, parseTimeOrAge, secondsOrDuration } from '../../src/cli/optionParsers.js';

const NOW = Date.parse('2026-11-20T12:00:00Z');

describe('a time on the command line', () => {
  it.each([
    ['1h', NOW - 3_600_000],
    ['30m', NOW - 1_800_000],
    ['7d', NOW - 7 * 86_400_000],
    ['90s', NOW - 90_000],
    ['2 days', NOW - 2 * 86_400_000],
    ['2026-11-20T00:00:00Z', Date.parse('2026-11-20T00:00:00Z')],
    ['2026-11-19', Date.parse('2026-11-19')],
    ['2026-11-20T01:00:00+01:00', Date.parse('2026-11-20T00:00:00Z')],
  ])('%j is %d', (text, expected) => {
    expect(parseTimeOrAge(text, NOW)).toBe(expected);
  });

  it.each([
    '',
    'garbage',
    '1',
    '30',
    '1 fortnight',
    'h',
    'March 7',
    '2026-13-45T00:00:00Z',
    '-1h',
    '1e3h',
    '99999999999d',
  ])('%j is neither a time nor an age', (text) => {
    expect(parseTimeOrAge(text, NOW)).toBeUndefined();
  });
});

describe('a duration', () => {
  it.each([
    ['20s', 20_000],
    ['1.5h', 5_400_000],
    ['20', undefined],
    ['abc', undefined],
  ])('%j is %s ms', (text, expected) => {
    expect(parseDuration(text)).toBe(expected);
  });

  it.each([
    ['20', 20_000],
    ['0', 0],
    ['90s', 90_000],
    ['2m', 120_000],
  ])('--shutdown-timeout %j is %d ms', (text, expected) => {
    expect(secondsOrDuration(3_600)(text)).toBe(expected);
  });

  it.each(['abc', '-1', '2h', '3601', ''])('--shutdown-timeout %j is refused', (text) => {
    expect(() => secondsOrDuration(3_600)(text)).toThrow(/seconds .* or a duration/);
  });
});
