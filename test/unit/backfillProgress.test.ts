import { describe, expect, it } from 'vitest';
import {
  backfillProgress,
  PROGRESS_EVERY_MS,
  type BackfillState,
  type ProgressObservation,
} from '../../src/poll/backfillProgress.js';

const T = Date.UTC(2026, 10, 22, 12, 0, 0);
const HOUR = 3_600_000;
const BEHIND_MS = 2 * HOUR;

/** An observation at `now` of a log covered until `behind` ms before the service's now. */
const seen = (now: number, behind: number, pages = 0, entries = 0): ProgressObservation => ({
  now,
  serviceNow: now,
  coveredUntil: now - behind,
  pages,
  entries,
});
const tracking = (over: Partial<BackfillState> = {}): BackfillState => ({
  since: T,
  lastLineAt: T,
  pages: 10,
  entries: 2_000,
  lines: 0,
  ...over,
});

describe('backfillProgress', () => {
  it.each<[string, BackfillState | undefined, ProgressObservation, ReturnType<typeof backfillProgress>]>([
    ['a log within the distance is not tracked', undefined, seen(T, BEHIND_MS, 1, 200), { state: undefined }],
    [
      'a log first seen behind is tracked, silently',
      undefined,
      seen(T, 24 * HOUR, 1, 200),
      { state: { since: T, lastLineAt: T, pages: 1, entries: 200, lines: 0 } },
    ],
    [
      'a log behind counts its pages until the interval is up',
      tracking(),
      seen(T + PROGRESS_EVERY_MS - 1, 20 * HOUR, 1, 200),
      { state: tracking({ pages: 11, entries: 2_200 }) },
    ],
    [
      'a log behind for the interval logs where it is',
      tracking(),
      seen(T + PROGRESS_EVERY_MS, 20 * HOUR, 1, 200),
      {
        state: tracking({ pages: 11, entries: 2_200, lastLineAt: T + PROGRESS_EVERY_MS, lines: 1 }),
        line: {
          kind: 'behind',
          pages: 11,
          entries: 2_200,
          coveredUntil: T + PROGRESS_EVERY_MS - 20 * HOUR,
          behindSeconds: 72_000,
          entriesPerSecond: 220,
        },
      },
    ],
    [
      'the next line waits a whole interval after the last one',
      tracking({ lastLineAt: T + 25_000, lines: 2 }),
      seen(T + 34_000, 10 * HOUR),
      { state: tracking({ lastLineAt: T + 25_000, lines: 2 }) },
    ],
    [
      'a log that reported its backfill says when it has caught up',
      tracking({ lines: 3 }),
      seen(T + 42_400, 0, 1, 17),
      { state: undefined, line: { kind: 'caughtUp', pages: 11, entries: 2_017, seconds: 42 } },
    ],
    [
      'a backfill shorter than the interval ends without a word',
      tracking(),
      seen(T + 5_000, 0, 1, 17),
      { state: undefined },
    ],
    [
      'just inside the distance is caught up',
      tracking({ lines: 1 }),
      seen(T + 20_000, BEHIND_MS),
      { state: undefined, line: { kind: 'caughtUp', pages: 10, entries: 2_000, seconds: 20 } },
    ],
  ])('%s', (_name, state, observation, expected) => {
    expect(backfillProgress(state, observation, BEHIND_MS)).toEqual(expected);
  });
});
