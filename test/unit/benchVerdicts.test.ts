import { describe, expect, it } from 'vitest';
import { FAILOVER_FIRST_POLL, FAILOVER_FIRST_POLL_GOAL, judgeRows } from '../../bench/benchSections.js';
import { allOf, atLeast, atMost, judged, ratioAtMost, type BenchRow, type Goal } from '../../bench/benchTable.js';
import { freshnessGoal } from '../../bench/schedulingTargets.js';
import { standardErrorOfMean } from '../../bench/cases/schedulingDaemon.js';
import { freshnessVerdicts, ratioError, type FreshnessRun } from '../../bench/schedulingDaemonWallClock.js';

const row = (columns: Record<string, string | number>): BenchRow => ({ case: 'c', ...columns });

describe('a bench row judged against its goal', () => {
  const cases: Array<[string, Goal, BenchRow, string, 'met' | 'short']> = [
    ['at least, above', atLeast('events/s', 2_000), row({ 'events/s': 2_500 }), '>= 2,000 events/s', 'met'],
    ['at least, exactly', atLeast('events/s', 2_000), row({ 'events/s': 2_000 }), '>= 2,000 events/s', 'met'],
    ['at least, below', atLeast('events/s', 2_000), row({ 'events/s': 1_999 }), '>= 2,000 events/s', 'short'],
    [
      'a figure given as text',
      atMost('p95 delay min', 32),
      row({ 'p95 delay min': '31.98' }),
      '<= 32 p95 delay min',
      'met',
    ],
    ['a missing figure is short', atLeast('events/s', 1), row({}), '>= 1 events/s', 'short'],
    ['an empty cell is short', atMost('429s', 0), row({ '429s': '' }), '<= 0 429s', 'short'],
    ['a figure that is not a number is short', atMost('max s', 25), row({ 'max s': 'never' }), '<= 25 max s', 'short'],
    ['a unit for the text', atMost('cores', 1, 'core'), row({ cores: 0.6 }), '<= 1 core', 'met'],
    [
      'a ratio of two columns',
      ratioAtMost('store tx/s', 'requests/s', 1.5, '<= 1.5 per request'),
      row({ 'store tx/s': 952, 'requests/s': 199 }),
      '<= 1.5 per request',
      'short',
    ],
    [
      'all of several: one short is short',
      allOf(atMost('RSS max MiB', 476.8), atMost('cores', 1)),
      row({ 'RSS max MiB': 417, cores: 1.2 }),
      '<= 476.8 RSS max MiB, <= 1 cores',
      'short',
    ],
  ];
  it.each(cases)('%s', (_name, goal, measured, text, verdict) => {
    expect(judged(measured, goal)).toEqual({ ...measured, goal: text, verdict });
  });
});

describe("issue 28's goals", () => {
  const firstPoll = (p95: number, max: number): BenchRow => ({ case: FAILOVER_FIRST_POLL, 'p95 s': p95, 'max s': max });
  it.each([
    [17, 24, 'met'],
    [20, 25, 'met'],
    [27, 34, 'short'],
    [19, 26, 'short'],
  ])('failover: first poll p95 %s s, max %s s: %s', (p95, max, verdict) => {
    expect(judged(firstPoll(p95, max), FAILOVER_FIRST_POLL_GOAL).verdict).toBe(verdict);
  });

  it('judges only the rows that have a goal', () => {
    const rows = [{ case: 'kill -> first request by a survivor', 'p95 s': 30, 'max s': 40 }, firstPoll(18, 22)];
    const out = judgeRows(rows, new Map([[FAILOVER_FIRST_POLL, FAILOVER_FIRST_POLL_GOAL]]));
    expect(out.map((r) => r.verdict)).toEqual([undefined, 'met']);
  });

  const roundRobin: BenchRow = {
    case: 'zipf s=1.0',
    policy: 'round-robin',
    'mean delay min': '17.32',
    'p95 delay min': '32.79',
  };
  it.each([
    ['mean 0.569 x and p95 below: met', '9.86', '31.98', 'met'],
    ['mean above 0.57 x round-robin: short', '10.48', '31.98', 'short'],
    ['p95 above round-robin: short', '9.86', '32.80', 'short'],
  ])('freshness, real daemon against round-robin: %s', (_name, mean, p95, verdict) => {
    const ours = { case: 'zipf s=1.0', policy: 'ours', 'mean delay min': mean, 'p95 delay min': p95 };
    expect(judged(ours, freshnessGoal(roundRobin)).verdict).toBe(verdict);
  });

  it('freshness without a round-robin row to compare with is short', () => {
    const ours = { case: 'zipf s=1.0', policy: 'ours', 'mean delay min': '1.00', 'p95 delay min': '2.00' };
    expect(judged(ours, freshnessGoal(undefined)).verdict).toBe('short');
  });
});

describe('the freshness goal judged with the error of its draw', () => {
  it.each([
    ['no spread', [5, 5, 5, 5], 0],
    ['two values', [0, 2], 1],
    ['sd 2 over four', [1, 3, 5, 7], Math.sqrt(20 / 3 / 4)],
    ['one value has no error to speak of', [7], 0],
  ])('standard error of a mean: %s', (_name, values, error) => {
    expect(standardErrorOfMean(values)).toBeCloseTo(error, 9);
  });

  it.each([
    ['no error on either side', 9, 0, 18, 0, 0],
    ['ours alone: its relative error', 9, 0.3, 18, 0, 0.5 * (0.3 / 9)],
    ['both: relative errors add in quadrature', 9, 0.3, 18, 0.6, 0.5 * Math.hypot(0.3 / 9, 0.6 / 18)],
    ['an empty run has none', 0, 0.3, 18, 0.6, 0],
  ])('error of a ratio: %s', (_name, a, aError, b, bError, expected) => {
    expect(ratioError(a, aError, b, bError)).toBeCloseTo(expected, 9);
  });

  it('gives each seed its ratio and the error of one draw', () => {
    const run = (
      policy: string,
      meanMinutes: number,
      meanErrorMinutes: number,
      p95Minutes: number,
      expectedMeanMinutes: number,
      expectedP95Minutes: number,
    ) =>
      ({
        seed: 9,
        policy,
        meanMinutes,
        meanErrorMinutes,
        p95Minutes,
        expectedMeanMinutes,
        expectedP95Minutes,
      }) as FreshnessRun;
    const [verdict] = freshnessVerdicts([
      run('round-robin', 16.59, 0.35, 32.36, 16.89, 32.32),
      run('adaptive', 9.91, 0.3, 31.24, 9.6, 31.55),
    ]);
    expect(verdict?.meanRatio).toBeCloseTo(0.597, 3);
    expect(verdict?.meanRatioError).toBeCloseTo(0.022, 3);
    expect(verdict?.met).toBe(false);
    expect(verdict?.expectedMeanRatio).toBeCloseTo(0.568, 3);
    expect(verdict?.expectedP95Ratio).toBeCloseTo(0.976, 3);
  });
});
