import { describe, expect, it } from 'vitest';
import { RateEstimator, emptyRateState, type RateState } from '../../src/poll/rateEstimator.js';
import { scheduleConfigSchema } from '../../src/poll/scheduleConfig.js';

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 0, 1);
const config = scheduleConfigSchema.parse({});

/** Polls every `everyMs` for `hours`, each poll returning the changes of a steady `perHour` rate. */
function steady(estimator: RateEstimator, perHour: number, hours: number, everyMs = 600_000): RateState {
  let state = estimator.observe(emptyRateState(), T0, []);
  let carry = 0;
  for (let t = T0 + everyMs; t <= T0 + hours * HOUR; t += everyMs) {
    carry += (perHour * everyMs) / HOUR;
    const n = Math.floor(carry);
    carry -= n;
    state = estimator.observe(state, t, Array.from({ length: n }, (_, i) => t - ((i + 1) * everyMs) / (n + 1)));
  }
  return state;
}

describe('RateEstimator', () => {
  it('starts from the prior rate: priorEvents over priorHours', () => {
    const estimator = new RateEstimator(config);
    expect(estimator.longRunRate(emptyRateState())).toBeCloseTo(config.priorEvents / config.priorHours);
  });

  it('the first poll only starts the observation (it may be a backfill)', () => {
    const estimator = new RateEstimator(config);
    const state = estimator.observe(emptyRateState(), T0, Array.from({ length: 500 }, () => T0 - 1_000));
    expect(state).toMatchObject({ events: 0, hours: 0, updatedAt: T0 });
  });

  it('converges to a steady rate from exact counts over observed time', () => {
    const estimator = new RateEstimator({ ...config, burstFollowUps: 0 });
    // Within 10%: the prior still weighs a little after two days.
    expect(Math.abs(estimator.longRunRate(steady(estimator, 12, 48)) / 12 - 1)).toBeLessThan(0.1);
    expect(estimator.longRunRate(steady(estimator, 0.2, 48))).toBeGreaterThan(0.15);
    expect(estimator.longRunRate(steady(estimator, 0.2, 48))).toBeLessThan(0.3);
  });

  it('forgets old activity with the rate half-life', () => {
    const estimator = new RateEstimator({ ...config, burstFollowUps: 0, rateHalfLifeHours: 6 });
    let state = steady(estimator, 20, 24);
    // Then silence for a day: the estimate falls back toward the prior.
    state = estimator.observe(state, T0 + 48 * HOUR, []);
    expect(estimator.longRunRate(state)).toBeLessThan(2);
  });

  it('jumps on a burst of changes and decays with the burst half-life', () => {
    const estimator = new RateEstimator(config);
    let state = estimator.observe(emptyRateState(), T0, []);
    const now = T0 + 10 * 60_000;
    state = estimator.observe(state, now, Array.from({ length: 10 }, () => now - 30_000));
    const right = estimator.burstRate(state, now);
    // Ten changes, each expecting burstFollowUps more within a few half-lives: a rate in the tens per hour.
    expect(right).toBeGreaterThan(50);
    const halfLifeMs = config.burstHalfLifeMinutes * 60_000;
    expect(estimator.burstRate(state, now + halfLifeMs)).toBeCloseTo(right / 2, 5);
    expect(estimator.effectiveRate(state, now + 12 * halfLifeMs)).toBeCloseTo(estimator.longRunRate(state), 1);
  });

  it('a burst term integrates to burstFollowUps further changes per change seen', () => {
    const estimator = new RateEstimator({ ...config, burstFollowUps: 2 });
    let state = estimator.observe(emptyRateState(), T0, []);
    state = estimator.observe(state, T0 + 60_000, [T0 + 60_000]);
    let expected = 0;
    const step = 1_000;
    for (let t = T0 + 60_000; t < T0 + 5 * HOUR; t += step) expected += (estimator.burstRate(state, t) * step) / HOUR;
    expect(expected).toBeCloseTo(2, 1);
  });
});
