import { describe, expect, it } from 'vitest';
import { firstDiscoveryAt } from '../../src/poll/discoverySchedule.js';

const at = (hhmmss: string): number => Date.parse(`2026-11-26T${hhmmss}Z`);
const EVERY_15 = '*/15 * * * *';

describe('firstDiscoveryAt', () => {
  const now = at('10:20:00');
  it.each([
    ['none recorded: at once', undefined, 'career,skill', 0, now],
    [
      'recorded at 10:15: the next cron time, 10:30',
      { at: at('10:15:02'), lists: 'career,skill' },
      'career,skill',
      0,
      at('10:30:00'),
    ],
    [
      'a run missed (last at 10:01, 10:15 passed): at once',
      { at: at('10:01:00'), lists: 'career,skill' },
      'career,skill',
      0,
      now,
    ],
    [
      'other lists than the config turns on now: at once',
      { at: at('10:15:02'), lists: 'career' },
      'career,skill',
      0,
      now,
    ],
    [
      'lists not recorded (a store of 1.0.0): at once',
      { at: at('10:15:02'), lists: undefined },
      'career,skill',
      0,
      now,
    ],
    // A corrupt value, or a service clock hours ahead that no answer has measured yet (the ping at
    // start failed): the cron still promises a run by the next cron time.
    [
      'recorded in the future (a service clock 3 h ahead, not yet measured): the next cron time, 10:30',
      { at: at('13:19:00'), lists: 'career,skill' },
      'career,skill',
      0,
      at('10:30:00'),
    ],
    [
      'recorded in a far future: the next cron time, 10:30',
      { at: Date.parse('2100-01-01T00:00:00Z'), lists: 'career,skill' },
      'career,skill',
      0,
      at('10:30:00'),
    ],
    ['a time no Date holds: at once', { at: -1e20, lists: 'career,skill' }, 'career,skill', 0, now],
    ['an unreadable time: at once', { at: Number.NaN, lists: 'career,skill' }, 'career,skill', 0, now],
    // The service's clock runs 20 s ahead: its 10:15:10 is our 10:14:50, before the 10:15 run.
    ['recorded on the service clock, brought to ours', { at: at('10:15:10'), lists: 'career' }, 'career', 20_000, now],
  ])('%s', (_, recorded, lists, offsetMs, expected) => {
    expect(firstDiscoveryAt(now, EVERY_15, recorded, lists, offsetMs)).toBe(expected);
  });
});
