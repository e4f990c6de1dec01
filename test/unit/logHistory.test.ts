import { describe, expect, it } from 'vitest';
import type { ActivityEntry } from '../../src/api/activityEntry.js';
import { versionLogHistory } from '../../src/poll/logHistory.js';

const HOUR = 3_600_000;
const NOW = Date.UTC(2026, 10, 22, 12);
const WEEK = 168 * HOUR;

const entry = (id: string, at: number | null): ActivityEntry => ({
  id,
  event: 'version_created',
  description: null,
  performedById: null,
  performedAt: at === null ? null : new Date(at).toISOString(),
});

describe('versionLogHistory', () => {
  it('a log older than the lookback is observed over the lookback: older versions are left out', () => {
    const history = versionLogHistory(
      [entry('a', NOW - 2 * WEEK), entry('b', NOW - 3 * 24 * HOUR), entry('c', NOW - HOUR)],
      NOW,
      WEEK,
    );
    expect(history).toEqual({ fromMs: NOW - WEEK, toMs: NOW, performedAt: [NOW - 3 * 24 * HOUR, NOW - HOUR] });
  });

  it('a log that begins within the lookback is observed from its first entry, which is not a change in it', () => {
    // Newest first, as the service may list it; the undated entry cannot be placed and is not counted.
    const history = versionLogHistory(
      [entry('c', NOW - HOUR), entry('x', null), entry('a', NOW - 2 * 24 * HOUR)],
      NOW,
      WEEK,
    );
    expect(history).toEqual({ fromMs: NOW - 2 * 24 * HOUR, toMs: NOW, performedAt: [NOW - HOUR] });
  });

  it('a log without a dated entry has no history to learn from', () => {
    expect(versionLogHistory([entry('x', null)], NOW, WEEK)).toBeUndefined();
    expect(versionLogHistory([], NOW, WEEK)).toBeUndefined();
  });
});
