import { describe, expect, it } from 'vitest';
import { parseUtcTimestamp } from '../../src/simulator/activityQuery.js';

describe('parseUtcTimestamp', () => {
  it.each([
    ['2026-01-01T00:00:00Z', Date.UTC(2026, 0, 1)],
    ['2026-01-01T00:00Z', Date.UTC(2026, 0, 1)],
    ['2026-01-01T00:00:00+00:00', Date.UTC(2026, 0, 1)],
    ['2026-01-01T00:00:00.123456789Z', Date.UTC(2026, 0, 1) + 123],
    ['2024-02-29T23:59:59Z', Date.UTC(2024, 1, 29, 23, 59, 59)],
    ['0100-01-01T00:00:00Z', Date.parse('0100-01-01T00:00:00Z')],
    ['1969-12-31T23:59:59.999Z', -1],
  ])('reads %s', (raw, ms) => {
    expect(parseUtcTimestamp(raw)).toBe(ms);
  });

  it.each([
    '2026-02-30T00:00:00Z',
    '2026-02-29T00:00:00Z',
    '2026-01-01T24:00:00Z',
    '2026-12-31T24:00Z',
    '2026-01-01T23:60:00Z',
    '2026-01-01T23:59:60Z',
    '2026-13-01T00:00:00Z',
    '2026-01-00T00:00:00Z',
    '2026-01-01T00:00:00+02:00',
    '2026-01-01',
    // Years before 0100: Date.UTC reads them as 19xx.
    '0000-01-01T00:00:00Z',
    '0050-06-01T00:00:00Z',
    '0099-12-31T23:59:59Z',
  ])('refuses %s', (raw) => {
    expect(parseUtcTimestamp(raw)).toBeNull();
  });
});
