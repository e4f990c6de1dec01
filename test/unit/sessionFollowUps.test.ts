import { describe, expect, it } from 'vitest';
import { SessionFollowUps, noFollowUp, type PollEvidence } from '../../src/schedule/sessionFollowUps.js';

const T0 = Date.UTC(2026, 0, 1, 8);
const MINUTE = 60_000;
const followUps = () => new SessionFollowUps({ followUpPolls: 3, sessionGapSeconds: 120 }, MINUTE);
const evidence = (over: Partial<PollEvidence>): PollEvidence => ({
  previousNewest: T0 - 60 * MINUTE,
  newest: T0 - 30_000,
  serviceNow: T0,
  changesPerSession: 12,
  ratePerHour: 2,
  ...over,
});

describe('SessionFollowUps', () => {
  it('sees a session in progress only in a new, recent change of a log whose changes cluster', () => {
    const f = followUps();
    expect(f.inProgress(evidence({}))).toBe(true);
    expect(f.inProgress(evidence({ newest: T0 - 3 * MINUTE }))).toBe(false);
    expect(f.inProgress(evidence({ previousNewest: T0 - 30_000 }))).toBe(false);
    expect(f.inProgress(evidence({ newest: null }))).toBe(false);
    // One change per session: independent changes, nothing to follow.
    expect(f.inProgress(evidence({ changesPerSession: 1.1 }))).toBe(false);
    // 90 changes an hour run together by chance (e^(90·2/60) ≈ 20 per run): not a session.
    expect(f.inProgress(evidence({ ratePerHour: 90, changesPerSession: 25 }))).toBe(false);
  });

  it('chains at most followUpPolls follow-ups, one minimum interval apart, and a quiet poll ends the chain', () => {
    const f = followUps();
    let state = f.afterPoll(noFollowUp(), T0, true);
    expect(state).toEqual({ dueAt: T0 + MINUTE, inRow: 1 });
    state = f.afterPoll(state, T0 + MINUTE, true);
    state = f.afterPoll(state, T0 + 2 * MINUTE, true);
    expect(state.inRow).toBe(3);
    expect(f.afterPoll(state, T0 + 3 * MINUTE, true)).toEqual(noFollowUp());
    expect(f.afterPoll({ dueAt: T0 + MINUTE, inRow: 1 }, T0 + MINUTE, false)).toEqual(noFollowUp());
  });

  it('counts the follow-up polls of the last hour, so the allocation leaves them out', () => {
    const f = followUps();
    let state = f.afterPoll(noFollowUp(), T0, true);
    // A regular poll does not count; the due follow-ups do.
    expect(f.lastHour(T0)).toBe(0);
    state = f.afterPoll(state, T0 + MINUTE, true);
    f.afterPoll(state, T0 + 2 * MINUTE, false);
    expect(f.lastHour(T0 + 2 * MINUTE)).toBe(2);
    expect(f.lastHour(T0 + 61 * MINUTE + 1)).toBe(1);
    expect(f.lastHour(T0 + 62 * MINUTE + 1)).toBe(0);
  });
});
