import { describe, expect, it } from 'vitest';
import { RateEstimator } from '../../src/schedule/rateEstimator.js';
import { emptyRateState, type RateState } from '../../src/schedule/rateState.js';
import { scheduleConfigSchema } from '../../src/schedule/scheduleConfig.js';
import { configuredPrior } from '../../src/schedule/sessionPrior.js';

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 0, 1);
const config = scheduleConfigSchema.parse({});
const prior = configuredPrior(config);
/** A change dated 70 years ahead: a wrong clock, or a hostile answer. */
const FUTURE = Date.UTC(2096, 0, 1);

/** Polls every `everyMs` for `hours`; each poll returns `perPoll(t)` changes spread evenly over its interval. */
function observeFor(
  estimator: RateEstimator,
  hours: number,
  perPoll: (t: number) => number,
  everyMs = 600_000,
): RateState {
  let state = estimator.observe(emptyRateState(), T0, []);
  for (let t = T0 + everyMs; t <= T0 + hours * HOUR; t += everyMs) {
    const n = perPoll(t);
    state = estimator.observe(
      state,
      t,
      Array.from({ length: n }, (_, i) => t - ((i + 1) * everyMs) / (n + 1)),
    );
  }
  return state;
}

/** A steady rate: the fractional part carries over to the next poll. */
function steady(perHour: number, everyMs = 600_000): (t: number) => number {
  let carry = 0;
  return () => {
    carry += (perHour * everyMs) / HOUR;
    const n = Math.floor(carry);
    carry -= n;
    return n;
  };
}

describe('RateEstimator', () => {
  it('starts from the prior rate: priorEvents over priorHours', () => {
    const estimator = new RateEstimator(config);
    expect(estimator.rate(emptyRateState(), prior)).toBeCloseTo(config.priorEvents / config.priorHours);
  });

  it('the first poll only starts the observation (it may be a backfill)', () => {
    const estimator = new RateEstimator(config);
    const state = estimator.observe(
      emptyRateState(),
      T0,
      Array.from({ length: 500 }, () => T0 - 1_000),
    );
    expect(state).toMatchObject({ events: 0, sessions: 0, hours: 0, updatedAt: T0, lastEventAt: T0 - 1_000 });
  });

  it('converges to a steady rate from exact counts over observed time', () => {
    const estimator = new RateEstimator(config);
    // Within 10%: the prior still weighs a little after two days.
    expect(Math.abs(estimator.rate(observeFor(estimator, 48, steady(12)), prior) / 12 - 1)).toBeLessThan(0.1);
    const quiet = estimator.rate(observeFor(estimator, 48, steady(0.2)), prior);
    expect(quiet).toBeGreaterThan(0.15);
    expect(quiet).toBeLessThan(0.3);
  });

  it('forgets old activity with the rate half-life', () => {
    const estimator = new RateEstimator({ ...config, rateHalfLifeHours: 6 });
    let state = observeFor(estimator, 24, steady(20));
    // Then silence for a day: the estimate falls back toward the prior.
    state = estimator.observe(state, T0 + 48 * HOUR, []);
    expect(estimator.rate(state, prior)).toBeLessThan(2);
  });

  it('counts changes less than sessionGapSeconds apart as one session, also across two polls', () => {
    // A half-life long enough that decay does not blur the counts.
    const estimator = new RateEstimator({ ...config, sessionGapSeconds: 120, rateHalfLifeHours: 1e9 });
    let state = estimator.observe(emptyRateState(), T0, []);
    // A session of five changes 30 s apart, cut in two by a poll; then a lone change an hour later.
    state = estimator.observe(state, T0 + 10 * 60_000, [T0 + 8 * 60_000, T0 + 8.5 * 60_000, T0 + 9 * 60_000]);
    state = estimator.observe(state, T0 + 20 * 60_000, [T0 + 9.5 * 60_000, T0 + 10 * 60_000]);
    state = estimator.observe(state, T0 + 80 * 60_000, [T0 + 70 * 60_000]);
    expect(state.events).toBeCloseTo(6, 2);
    expect(state.sessions).toBeCloseTo(2, 2);
    expect(estimator.changesPerSession(state, prior)).toBeCloseTo((6 + 1) / 3, 2);
  });

  // One change dated years ahead stood as the newest for ever: no later change began a session.
  it.each([
    [
      'seen by a poll',
      (e: RateEstimator) => e.observe(e.observe(emptyRateState(), T0, []), T0 + 10 * 60_000, [FUTURE]),
    ],
    [
      'read as history',
      (e: RateEstimator) =>
        e.observeHistory(T0 + 10 * 60_000, { fromMs: T0, toMs: T0 + 10 * 60_000, performedAt: [FUTURE] }),
    ],
    [
      'restored as the newest change',
      () => ({ ...emptyRateState(), lastEventAt: FUTURE, updatedAt: T0 + 10 * 60_000 }),
    ],
  ])('a change dated in the future (%s) is taken as made now: later sessions still count', (_how, first) => {
    const estimator = new RateEstimator({ ...config, sessionGapSeconds: 120, rateHalfLifeHours: 1e9 });
    let state = first(estimator);
    const before = state.sessions;
    for (let hour = 1; hour <= 5; hour++)
      state = estimator.observe(state, T0 + hour * HOUR + 10 * 60_000, [T0 + hour * HOUR]);
    expect(state.sessions - before).toBeCloseTo(5, 2);
    expect(state.lastEventAt).toBe(T0 + 5 * HOUR);
  });

  // The dates were believed up to our clock: with the service five minutes ahead, each change of a
  // session was dated at the poll that saw it, and a session cut by a poll counted twice.
  it('believes the dates up to the service clock: a session cut by a poll counts once with the service ahead', () => {
    const estimator = new RateEstimator({ ...config, sessionGapSeconds: 120, rateHalfLifeHours: 1e9 });
    const ahead = 5 * 60_000;
    const observe = (state: RateState, now: number, performedAt: number[]): RateState =>
      estimator.observe(state, now, performedAt, now + ahead);
    let state = observe(emptyRateState(), T0, []);
    // Five changes 30 s apart (on the service's clock), cut in two by a poll; a lone one an hour later.
    state = observe(state, T0 + 10 * 60_000, [
      T0 + ahead + 8 * 60_000,
      T0 + ahead + 8.5 * 60_000,
      T0 + ahead + 9 * 60_000,
    ]);
    state = observe(state, T0 + 20 * 60_000, [T0 + ahead + 9.5 * 60_000, T0 + ahead + 10 * 60_000]);
    state = observe(state, T0 + 80 * 60_000, [T0 + ahead + 70 * 60_000]);
    expect(state.events).toBeCloseTo(6, 2);
    expect(state.sessions).toBeCloseTo(2, 2);
    expect(state.lastEventAt).toBe(T0 + ahead + 70 * 60_000);
  });

  it('a burst of changes weighs as one session: one busy afternoon does not make a busy log', () => {
    const estimator = new RateEstimator(config);
    const lone = observeFor(estimator, 10, (t) => (t === T0 + 5 * HOUR ? 1 : 0));
    const burst = observeFor(estimator, 10, (t) => (t === T0 + 5 * HOUR ? 20 : 0));
    expect(burst.sessions).toBeCloseTo(lone.sessions, 5);
    // Twenty changes in one session count as 20 changes, but only one session's worth of evidence:
    // the estimate rises in proportion, not beyond (a Poisson count of 20 would say 2 per hour).
    expect(estimator.rate(burst, prior)).toBeLessThan(20 * estimator.rate(lone, prior));
  });

  it('history read on the first poll weighs as the same changes seen live over the same hours', () => {
    const estimator = new RateEstimator(config);
    // Three sessions a day for a week, 4 changes a minute apart each.
    const changes: number[] = [];
    for (let day = 0; day < 7; day++) {
      for (const hour of [9, 13, 16])
        for (let i = 0; i < 4; i++) changes.push(T0 + (day * 24 + hour) * HOUR + i * 60_000);
    }
    const end = T0 + 168 * HOUR;
    let live = estimator.observe(emptyRateState(), T0, []);
    for (let t = T0 + 600_000; t <= end; t += 600_000)
      live = estimator.observe(
        live,
        t,
        changes.filter((c) => c < t && c >= t - 600_000),
      );
    const history = estimator.observeHistory(end, { fromMs: T0, toMs: end, performedAt: changes });
    // Live counts are weighed from the poll that saw them, history from the change itself: minutes apart.
    for (const field of ['sessions', 'events', 'hours'] as const)
      expect(Math.abs(history[field] / live[field] - 1), field).toBeLessThan(0.005);
    expect(history).toMatchObject({ lastEventAt: changes.at(-1), updatedAt: end });
    // 21 sessions over a week, 4 changes each: half a change an hour.
    expect(estimator.rate(history, prior)).toBeGreaterThan(0.4);
    expect(estimator.rate(history, prior)).toBeLessThan(0.6);
  });

  it('a week of history without a change pulls the prior rate down at once', () => {
    const estimator = new RateEstimator(config);
    const quiet = estimator.observeHistory(T0 + 168 * HOUR, { fromMs: T0, toMs: T0 + 168 * HOUR, performedAt: [] });
    expect(estimator.rate(quiet, prior)).toBeLessThan(0.02);
    expect(estimator.rate(emptyRateState(), prior)).toBeCloseTo(0.5);
  });
});
