import { describe, expect, it } from 'vitest';
import { parseDuration, parseTimeOrAge, secondsOrDuration, timeOrAge } from '../../src/cli/optionParsers.js';

const NOW = Date.parse('2026-11-20T12:00:00Z');

describe('a time on the command line', () => {
  it.each([
    ['1h', NOW - 3_600_000],
    ['30m', NOW - 1_800_000],
    ['7d', NOW - 7 * 86_400_000],
    ['90s', NOW - 90_000],
    ['2 days', NOW - 2 * 86_400_000],
    ['2026-11-20T00:00:00Z', Date.parse('2026-11-20T00:00:00Z')],
    ['2026-11-19', Date.parse('2026-11-19T00:00:00Z')],
    ['2028-02-29', Date.parse('2028-02-29T00:00:00Z')],
    ['2026-11-20T01:00:00+01:00', Date.parse('2026-11-20T00:00:00Z')],
    ['2026-11-19T20:00:00-04:00', Date.parse('2026-11-20T00:00:00Z')],
    ['2026-11-20T00:00:00.250Z', Date.parse('2026-11-20T00:00:00Z') + 250],
    [' 2026-11-20T00:00:00Z ', Date.parse('2026-11-20T00:00:00Z')],
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
    // No zone: Date.parse would read these in the machine's local zone.
    '2026-01-01 12:00',
    '2026-01-01T12:00',
    '2026-01-01T12:00:00',
    '2026-01-01 12:00:00Z',
    // Days their month does not have: Date.parse rolls them over into the next month.
    '2026-02-30',
    '2026-02-29T00:00:00Z',
    '2026-04-31T00:00:00Z',
    '2026-11-20T24:00:00Z',
    // Not RFC 3339: no seconds, an offset without its colon or minutes, a year with a sign.
    '2026-11-20T00:00Z',
    '2026-11-20T01:00:00+0100',
    '2026-11-20T01:00:00+01',
    '+002026-11-20T00:00:00Z',
    '2026-11',
    '-1h',
    '1e3h',
    '99999999999d',
  ])('%j is neither a time nor an age', (text) => {
    expect(parseTimeOrAge(text, NOW)).toBeUndefined();
  });
});

describe('a refused time on the command line', () => {
  it.each(['2026-01-01 12:00', '2026-02-30'])('%j is refused naming every accepted form', (text) => {
    const parse = timeOrAge(() => NOW);
    expect(() => parse(text)).toThrow(`got "${text}"`);
    expect(() => parse(text)).toThrow(/2026-11-20T08:30:00Z.*\+01:00.*midnight UTC \(2026-11-20\).*1h/);
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
