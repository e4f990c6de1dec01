import { describe, expect, it } from 'vitest';
import { believableCursor, nextWindow, splitWindow, toIso } from '../../src/poll/timeWindow.js';

const T = Date.UTC(2026, 0, 10, 12, 0, 0);

describe('nextWindow', () => {
  it('starts the overlap before the end of the last window and ends at the service clock', () => {
    expect(
      nextWindow({ windowEnd: T, coverageStart: T - 3_600_000, overlapMs: 300_000, serverNow: T + 60_000 }),
    ).toEqual({
      from: T - 300_000,
      to: T + 60_000,
    });
  });

  it('never reaches back before coverageStart, however large the overlap', () => {
    expect(nextWindow({ windowEnd: T, coverageStart: T - 1_000, overlapMs: 300_000, serverNow: T + 5_000 })).toEqual({
      from: T - 1_000,
      to: T + 5_000,
    });
  });

  it('truncates a fractional service time to whole milliseconds', () => {
    expect(nextWindow({ windowEnd: T, coverageStart: T, overlapMs: 0, serverNow: T + 10.9 })?.to).toBe(T + 10);
  });

  it('is undefined when the service clock has not moved past the start', () => {
    expect(nextWindow({ windowEnd: T, coverageStart: T, overlapMs: 0, serverNow: T })).toBeUndefined();
    expect(nextWindow({ windowEnd: T, coverageStart: T, overlapMs: 0, serverNow: T - 5_000 })).toBeUndefined();
    expect(nextWindow({ windowEnd: T, coverageStart: T, overlapMs: 0, serverNow: T + 0.5 })).toBeUndefined();
  });

  it('still yields a window when only the overlap makes it non-empty', () => {
    expect(nextWindow({ windowEnd: T, coverageStart: 0, overlapMs: 1_000, serverNow: T })).toEqual({
      from: T - 1_000,
      to: T,
    });
  });
});

describe('splitWindow', () => {
  it('halves a window into two adjacent half-open windows covering it exactly', () => {
    expect(splitWindow({ from: T, to: T + 10_000 })).toEqual([
      { from: T, to: T + 5_000 },
      { from: T + 5_000, to: T + 10_000 },
    ]);
  });

  it('puts the odd millisecond in the second half', () => {
    const halves = splitWindow({ from: 100, to: 103 });
    expect(halves).toEqual([
      { from: 100, to: 101 },
      { from: 101, to: 103 },
    ]);
  });

  it('splits a 2 ms window into two 1 ms windows', () => {
    expect(splitWindow({ from: T, to: T + 2 })).toEqual([
      { from: T, to: T + 1 },
      { from: T + 1, to: T + 2 },
    ]);
  });

  it('cannot split a 1 ms window (nor an empty one)', () => {
    expect(splitWindow({ from: T, to: T + 1 })).toBeUndefined();
    expect(splitWindow({ from: T, to: T })).toBeUndefined();
  });

  it('splits repeatedly down to 1 ms windows that still cover the original range without gaps', () => {
    const pending = [{ from: T, to: T + 37 }];
    const leaves: { from: number; to: number }[] = [];
    // Bounded, so a split that stops shrinking fails the test instead of hanging it.
    for (let guard = 0; pending.length > 0 && guard < 1_000; guard++) {
      const w = pending.pop()!;
      const halves = splitWindow(w);
      if (halves) pending.push(halves[1], halves[0]);
      else leaves.push(w);
    }
    expect(leaves).toHaveLength(37);
    leaves.forEach((w, i) => expect(w).toEqual({ from: T + i, to: T + i + 1 }));
  });
});

describe('toIso', () => {
  it('formats epoch milliseconds as ISO 8601 UTC for the from/to query', () => {
    expect(toIso(T + 7)).toBe('2026-01-10T12:00:00.007Z');
  });
});

describe('believableCursor', () => {
  it.each([
    ['a cursor in the past stays', 1_000, 5_000, 900, 1_000],
    ['a cursor at the service now stays', 5_000, 5_000, 900, 5_000],
    ['a cursor in the future goes back to the last successful poll', 9_999_999, 5_000, 900, 900],
    ['without a successful poll, to the service now', 9_999_999, 5_000, undefined, 5_000],
    ['never later than the service now', 9_999_999, 5_000, 7_000, 5_000],
  ])('%s', (_name, cursor, serverNow, lastSuccess, expected) => {
    expect(believableCursor(cursor, serverNow, lastSuccess)).toBe(expected);
  });
});
