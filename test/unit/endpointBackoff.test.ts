import { describe, expect, it } from 'vitest';
import { decideEndpointFailure, NO_FAILURES, type EndpointFailureRun } from '../../src/deliver/endpointBackoff.js';
import { ENDPOINT_BACKOFF_DEFAULTS } from '../../src/sinkContract/deliveryConfig.js';
import { classifyStatus } from '../../src/sinks/webhookSink.js';

const HOUR = 3_600_000;
const T0 = 1_000_000;

describe('decideEndpointFailure', () => {
  it.each<[string, EndpointFailureRun, number, number | undefined, number, ReturnType<typeof decideEndpointFailure>]>([
    [
      'first failure: 5 s',
      NO_FAILURES,
      T0,
      undefined,
      0,
      { kind: 'backOff', run: { failingSince: T0, failures: 1 }, until: T0 + 5_000 },
    ],
    [
      'second: 5 min',
      { failingSince: T0, failures: 1 },
      T0 + 5_000,
      undefined,
      0,
      { kind: 'backOff', run: { failingSince: T0, failures: 2 }, until: T0 + 305_000 },
    ],
    [
      'seventh: 10 h',
      { failingSince: T0, failures: 6 },
      T0 + HOUR,
      undefined,
      0,
      { kind: 'backOff', run: { failingSince: T0, failures: 7 }, until: T0 + 11 * HOUR },
    ],
    [
      'past the schedule the last pause repeats',
      { failingSince: T0, failures: 40 },
      T0 + HOUR,
      undefined,
      0,
      { kind: 'backOff', run: { failingSince: T0, failures: 41 }, until: T0 + 11 * HOUR },
    ],
    [
      'jitter lengthens by up to 10%',
      NO_FAILURES,
      T0,
      undefined,
      0.999_999,
      { kind: 'backOff', run: { failingSince: T0, failures: 1 }, until: T0 + 5_499 },
    ],
    [
      'Retry-After is a floor',
      NO_FAILURES,
      T0,
      60_000,
      0,
      { kind: 'backOff', run: { failingSince: T0, failures: 1 }, until: T0 + 60_000 },
    ],
    [
      'Retry-After is capped at an hour',
      NO_FAILURES,
      T0,
      30 * HOUR,
      0,
      { kind: 'backOff', run: { failingSince: T0, failures: 1 }, until: T0 + HOUR },
    ],
    [
      'just short of 5 days: still backing off',
      { failingSince: T0, failures: 15 },
      T0 + 120 * HOUR - 1,
      undefined,
      0,
      { kind: 'backOff', run: { failingSince: T0, failures: 16 }, until: T0 + 130 * HOUR - 1 },
    ],
    [
      '5 days of failure: disabled',
      { failingSince: T0, failures: 15 },
      T0 + 120 * HOUR,
      undefined,
      0,
      {
        kind: 'disable',
        run: { failingSince: T0, failures: 16 },
        reason: 'every attempt failed for 5 days (16 in a row; disableAfterSeconds 432000)',
      },
    ],
  ])('%s', (_name, run, now, retryAfterMs, random, expected) => {
    expect(decideEndpointFailure(run, now, ENDPOINT_BACKOFF_DEFAULTS, retryAfterMs, () => random)).toEqual(expected);
  });

  it('never disables with disableAfterSeconds 0', () => {
    const config = { scheduleMs: [1_000], disableAfterSeconds: 0 };
    expect(
      decideEndpointFailure({ failingSince: 0, failures: 1_000 }, 365 * 24 * HOUR, config, undefined, () => 0).kind,
    ).toBe('backOff');
  });
});

describe('classifyStatus', () => {
  it.each([
    [200, 'delivered'],
    [204, 'delivered'],
    [301, 'endpoint'],
    [400, 'event'],
    [401, 'endpoint'],
    [403, 'endpoint'],
    [404, 'endpoint'],
    [405, 'endpoint'],
    [407, 'endpoint'],
    [408, 'endpoint'],
    [409, 'event'],
    [410, 'gone'],
    [413, 'event'],
    [415, 'event'],
    [422, 'event'],
    [429, 'endpoint'],
    [500, 'endpoint'],
    [503, 'endpoint'],
    [599, 'endpoint'],
  ])('%i is %s', (status, expected) => {
    expect(classifyStatus(status)).toBe(expected);
  });
});
