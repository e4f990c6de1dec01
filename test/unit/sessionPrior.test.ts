import { describe, expect, it } from 'vitest';
import { emptyRateState, type RateState } from '../../src/schedule/rateState.js';
import {
  configuredPrior,
  fitSessionPrior,
  posteriorSessionRate,
  priorsByKind,
} from '../../src/schedule/sessionPrior.js';
import { Random } from '../../src/simulator/random.js';

const fallback = configuredPrior({ priorEvents: 1, priorHours: 2 });
const GAP_HOURS = 120 / 3600;

/** A log observed for `hours` that showed `sessions` sessions of `perSession` changes each. */
const observed = (sessions: number, hours: number, perSession = 1): RateState => ({
  ...emptyRateState(),
  events: sessions * perSession,
  sessions,
  hours,
  updatedAt: 0,
});

/** Poisson draw: Knuth's method for small means, the normal approximation for large ones. */
function poisson(random: Random, mean: number): number {
  if (mean > 50)
    return Math.max(
      0,
      Math.round(
        mean + Math.sqrt(mean) * Math.sqrt(-2 * Math.log(1 - random.next())) * Math.cos(2 * Math.PI * random.next()),
      ),
    );
  const limit = Math.exp(-mean);
  let k = 0;
  for (let p = random.next(); p > limit; p *= random.next()) k++;
  return k;
}

describe('posteriorSessionRate', () => {
  it('under the configured Gamma prior is (a + c) / (b + t)', () => {
    expect(posteriorSessionRate(fallback, 3, 10)).toBeCloseTo(4 / 12);
  });
});

describe('fitSessionPrior (empirical Bayes)', () => {
  it('keeps the configured prior until the logs have shown enough sessions', () => {
    const few = Array.from({ length: 50 }, (_, i) => observed(i < 5 ? 1 : 0, 3));
    expect(fitSessionPrior(few, fallback, GAP_HOURS)).toBe(fallback);
    const tooFewLogs = Array.from({ length: 5 }, () => observed(10, 3));
    expect(fitSessionPrior(tooFewLogs, fallback, GAP_HOURS)).toBe(fallback);
  });

  it('on a skewed population, estimates closer to the true rates than each log alone or the prior alone', () => {
    const random = Random.derive(11, 'prior');
    // 300 logs, Zipf s=1.5 session rates summing to 150 per hour, observed for 12 hours.
    const weights = Array.from({ length: 300 }, (_, i) => 1 / Math.pow(i + 1, 1.5));
    const total = weights.reduce((a, b) => a + b, 0);
    const truth = weights.map((w) => (150 * w) / total);
    const hours = 12;
    const states = truth.map((rate) => observed(poisson(random, rate * hours), hours));
    const prior = fitSessionPrior(states, fallback, GAP_HOURS);
    expect(prior.kind).toBe('fitted');
    const error = (estimate: (s: RateState) => number): number =>
      states.reduce((sum, s, i) => sum + (estimate(s) - (truth[i] ?? 0)) ** 2, 0);
    const fitted = error((s) => posteriorSessionRate(prior, s.sessions, s.hours));
    expect(fitted).toBeLessThan(error((s) => s.sessions / s.hours));
    expect(fitted).toBeLessThan(error((s) => posteriorSessionRate(fallback, s.sessions, s.hours)));
    // A log that showed nothing is believed quiet, far below the configured prior's 0.5 per hour.
    expect(posteriorSessionRate(prior, 0, hours)).toBeLessThan(0.1);
  });

  it('learns how many changes a session brings from the logs whose changes are sparse', () => {
    const states = Array.from({ length: 40 }, (_, i) => observed(i % 2, 10, 12));
    // A busy log whose changes run together by chance must not count as sessions of 50.
    states.push(observed(20, 10, 50));
    const prior = fitSessionPrior(states, fallback, GAP_HOURS);
    expect(prior.changesPerSession).toBeCloseTo(12, 5);
  });

  it('fits each log kind on its own, and keeps the configured prior when learnPrior is false', () => {
    const logs = [
      ...Array.from({ length: 30 }, () => ({ log: 'career' as const, state: observed(3, 10) })),
      ...Array.from({ length: 30 }, () => ({ log: 'skill' as const, state: observed(0, 10) })),
    ];
    const config = { priorEvents: 1, priorHours: 2, sessionGapSeconds: 120 };
    const priors = priorsByKind(logs, { ...config, learnPrior: true });
    expect(posteriorSessionRate(priors('career'), 0, 0)).toBeCloseTo(0.3, 1);
    expect(priors('skill')).toEqual(fallback);
    expect(priorsByKind(logs, { ...config, learnPrior: false })('career')).toEqual(fallback);
  });
});
