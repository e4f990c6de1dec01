import { describe, expect, it } from 'vitest';
import { expectedDelayGivenPolls, type PolledLog } from '../../bench/cases/expectedDelayGivenPolls.js';
import { pollTimesByLog } from '../../bench/cases/schedulingDaemon.js';

const MIN = 60_000;
const every = (intervalMinutes: number, untilMinutes: number): number[] =>
  Array.from({ length: Math.floor(untilMinutes / intervalMinutes) }, (_, i) => (i + 1) * intervalMinutes * MIN);

describe('the delay a day of polls gives a change at a random moment', () => {
  const cases: Array<[string, PolledLog[], number, number, number, number]> = [
    [
      'one log polled every 10 minutes: half an interval, p95 at 95% of one',
      [{ rate: 1, pollTimes: every(10, 60) }],
      60,
      120,
      5,
      9.5,
    ],
    [
      'rates 3:1 polled every 10 and 30 minutes: the mean weighs by rate, the tail is the slow log',
      [
        { rate: 3, pollTimes: every(10, 60) },
        { rate: 1, pollTimes: every(30, 60) },
      ],
      60,
      120,
      (3 * 5 + 15) / 4,
      24,
    ],
    ['polls in any order', [{ rate: 2, pollTimes: every(10, 60).reverse() }], 60, 120, 5, 9.5],
    [
      'a poll before the measured span does not count',
      [{ rate: 1, pollTimes: [-5 * MIN, ...every(20, 60)] }],
      60,
      120,
      10,
      19,
    ],
    ['no poll after the span: changes wait until the end of the day', [{ rate: 1, pollTimes: [] }], 60, 120, 90, 117],
    ['no change at all', [{ rate: 0, pollTimes: every(10, 60) }], 60, 120, 0, 0],
  ];
  it.each(cases)('%s', (_name, logs, untilMinutes, endMinutes, mean, p95) => {
    const expected = expectedDelayGivenPolls(logs, 0, untilMinutes * MIN, endMinutes * MIN);
    expect(expected.meanMinutes).toBeCloseTo(mean, 6);
    expect(expected.p95Minutes).toBeCloseTo(p95, 6);
  });
});

describe("the polls of each log, from the simulator's request record", () => {
  const request = (at: number, path: string, query: Record<string, string> = {}, status = 200) => ({
    at,
    path,
    query,
    status,
  });
  it('counts the first answered page of each poll, keyed as the true rates are', () => {
    const rates = new Map([
      ['career:car_1', 2],
      ['skill:skl_1', 1],
      ['identity_provider:null', 3],
      ['career:car_2', 0.5],
    ]);
    const requests = [
      request(1, '/api/v1/careers/car_1/activity', { from: 'x', offset: '0' }),
      request(2, '/api/v1/careers/car_1/activity', { offset: '200' }),
      request(3, '/api/v1/skills/skl_1/activity'),
      request(4, '/api/v1/skills/skl_1/activity', {}, 429),
      request(5, '/api/v1/identity-provider-events'),
      request(6, '/api/v1/careers'),
      request(7, '/api/v1/ping'),
    ];
    expect(pollTimesByLog(requests, rates)).toEqual([
      { rate: 2, pollTimes: [1] },
      { rate: 1, pollTimes: [3] },
      { rate: 3, pollTimes: [5] },
      { rate: 0.5, pollTimes: [] },
    ]);
  });
});
