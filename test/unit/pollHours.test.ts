import { describe, expect, it } from 'vitest';
import {
  addPollSample,
  mergePollHours,
  parsePollHours,
  POLL_HOURS_KEPT,
  type PollHour,
} from '../../src/poll/pollHours.js';

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 20, 10, 0, 0);
const bucket = (hour: number, over: Partial<PollHour> = {}): PollHour => ({
  hour,
  requests: 1,
  allowancePerHour: 900,
  polls: 1,
  failedPolls: 0,
  events: 0,
  worstLagSeconds: 10,
  ...over,
});
const sample = { requests: 2, allowancePerHour: 900, lagMs: 30_000, failed: false, events: 3 };

describe('pollHours', () => {
  it.each([
    {
      name: 'a first poll opens its hour',
      before: [],
      add: { ...sample, now: T0 + 5 * 60_000 },
      after: [bucket(T0, { requests: 2, events: 3, worstLagSeconds: 30 })],
    },
    {
      name: 'a poll in the same hour adds up and keeps the worst lag',
      before: [bucket(T0, { worstLagSeconds: 90 })],
      add: { ...sample, now: T0 + 59 * 60_000, lagMs: 20_000, failed: true },
      after: [bucket(T0, { requests: 3, polls: 2, failedPolls: 1, events: 3, worstLagSeconds: 90 })],
    },
    {
      name: 'a poll of a log never read leaves the lag as it was',
      before: [bucket(T0, { worstLagSeconds: 5 })],
      add: { ...sample, now: T0 + 1, lagMs: null },
      after: [bucket(T0, { requests: 3, polls: 2, events: 3, worstLagSeconds: 5 })],
    },
    {
      name: 'a poll in a later hour opens another bucket after the first',
      before: [bucket(T0)],
      add: { ...sample, now: T0 + HOUR },
      after: [bucket(T0), bucket(T0 + HOUR, { requests: 2, events: 3, worstLagSeconds: 30 })],
    },
    {
      name: 'an hour older than a day before the poll is dropped',
      before: [bucket(T0), bucket(T0 + HOUR)],
      add: { ...sample, now: T0 + POLL_HOURS_KEPT * HOUR },
      after: [bucket(T0 + HOUR), bucket(T0 + POLL_HOURS_KEPT * HOUR, { requests: 2, events: 3, worstLagSeconds: 30 })],
    },
    {
      name: 'a negative count from outside is counted as none',
      before: [],
      add: { ...sample, now: T0, requests: -4, events: -1, lagMs: -5_000 },
      after: [bucket(T0, { requests: 0, events: 0, worstLagSeconds: 0 })],
    },
  ])('$name', ({ before, add, after }) => {
    expect(addPollSample(before, add)).toEqual(after);
  });

  it("changes only the last bucket for a poll in its hour: the day's other buckets are kept, not copied", () => {
    const day = Array.from({ length: POLL_HOURS_KEPT }, (_, i) => bucket(T0 + i * HOUR));
    const after = addPollSample(day, { ...sample, now: T0 + (POLL_HOURS_KEPT - 1) * HOUR + 60_000 });
    expect(after.slice(0, -1).every((b, i) => b === day[i])).toBe(true);
    expect(after.at(-1)).toEqual(
      bucket(T0 + (POLL_HOURS_KEPT - 1) * HOUR, { requests: 3, polls: 2, events: 3, worstLagSeconds: 30 }),
    );
    expect(day.at(-1)).toEqual(bucket(T0 + (POLL_HOURS_KEPT - 1) * HOUR));
    // Buckets reaching back more than a day (not written by this build) are still cut to the day.
    const wide = [bucket(T0 - HOUR), ...day];
    expect(addPollSample(wide, { ...sample, now: T0 + (POLL_HOURS_KEPT - 1) * HOUR })).toEqual(after);
  });

  it('merges what an earlier holder stored with what this one counted since', () => {
    const stored = [bucket(T0, { requests: 10, worstLagSeconds: 100 }), bucket(T0 + HOUR, { allowancePerHour: 800 })];
    const counted = [bucket(T0 + HOUR, { requests: 4, allowancePerHour: null, worstLagSeconds: 50 })];
    expect(mergePollHours(stored, counted)).toEqual([
      bucket(T0, { requests: 10, worstLagSeconds: 100 }),
      bucket(T0 + HOUR, { requests: 5, polls: 2, allowancePerHour: 800, worstLagSeconds: 50 }),
    ]);
  });

  it.each([
    ['absent', undefined],
    ['not JSON', '{'],
    ['not a list', '{"hour":1}'],
  ])('reads a stored value that is %s as no hours', (_, raw) => {
    expect(parsePollHours(raw)).toEqual([]);
  });

  it('keeps the well-formed buckets of a stored value and drops the others', () => {
    const raw = JSON.stringify([bucket(T0), { hour: 'x' }, bucket(T0 + HOUR, { worstLagSeconds: null })]);
    expect(parsePollHours(raw)).toEqual([bucket(T0), bucket(T0 + HOUR, { worstLagSeconds: null })]);
  });
});
