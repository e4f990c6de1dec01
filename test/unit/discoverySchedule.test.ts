import { describe, expect, it } from 'vitest';
import { cronRunsPerHour, nextCronTime } from '../../src/poll/discoverySchedule.js';
import { appConfigSchema } from '../../src/config/appConfigSchema.js';

const NOON = Date.UTC(2026, 10, 26, 12, 0, 30);

describe('cronRunsPerHour', () => {
  it.each([
    ['*/15 * * * *', NOON, 4],
    ['0 * * * *', NOON, 1],
    ['*/5 * * * *', NOON, 12],
    // A daily schedule whose run is not in the next hour counts as one run in 24.
    ['0 9 * * *', NOON, 1 / 24],
    ['30 12 * * *', NOON, 1],
  ])('counts %s from %d as %d runs an hour', (expression, now, runs) => {
    expect(cronRunsPerHour(expression, now)).toBe(runs);
  });

  it('counts again in the next minute: a run entering the hour ahead counts from then', () => {
    expect(cronRunsPerHour('17 13 * * *', Date.UTC(2026, 10, 26, 12, 16, 10))).toBe(1 / 24);
    expect(cronRunsPerHour('17 13 * * *', Date.UTC(2026, 10, 26, 12, 16, 50))).toBe(1 / 24);
    expect(cronRunsPerHour('17 13 * * *', Date.UTC(2026, 10, 26, 12, 17, 0))).toBe(1);
  });
});

describe('nextCronTime', () => {
  it('is the next run after now, in UTC', () => {
    expect(nextCronTime('*/15 * * * *', NOON)).toBe(Date.UTC(2026, 10, 26, 12, 15));
  });
});

describe('watch.discovery.schedule in the config', () => {
  const parse = (schedule: string) =>
    appConfigSchema.safeParse({
      api: { baseUrl: 'http://127.0.0.1:1', apiKey: 'k_test_0123456789abcdef0123456789abcdef' },
      sinks: [{ name: 'out', type: 'stdout' }],
      watch: { discovery: { schedule } },
    });

  it.each([
    ['foo', /Unknown alias: foo/],
    ['* * *', /not a cron expression/],
    // Valid cron that never comes: 30 February.
    ['0 0 30 2 *', /No execution date was found/],
  ])('refuses %j, naming the setting', (schedule, reason) => {
    const result = parse(schedule);
    expect(result.success).toBe(false);
    expect(result.error?.issues).toEqual([
      expect.objectContaining({ path: ['watch', 'discovery', 'schedule'], message: expect.stringMatching(reason) }),
    ]);
  });

  it.each(['*/15 * * * *', '0 0 1 1 *', '0 */5 * * * *'])('accepts %j', (schedule) => {
    expect(parse(schedule).success).toBe(true);
  });
});
