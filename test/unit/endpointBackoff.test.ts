import { describe, expect, it } from 'vitest';
import {
  decideEndpointFailure,
  decideEndpointStart,
  NO_FAILURES,
  type EndpointFailureRun,
  type EndpointStart,
  type RecordedEndpointState,
} from '../../src/deliver/endpointBackoff.js';
import { endpointBackoffConfigSchema } from '../../src/sinkContract/deliveryConfig.js';
import { classifyStatus } from '../../src/sinks/webhookSink.js';

/** The endpoint backoff a sink gets when its config sets none: Svix's schedule, disabled after 5 days. */
const DEFAULTS = endpointBackoffConfigSchema.parse({});

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
    expect(decideEndpointFailure(run, now, DEFAULTS, retryAfterMs, () => random)).toEqual(expected);
  });

  it('never disables with disableAfterSeconds 0', () => {
    const config = { scheduleMs: [1_000], disableAfterSeconds: 0 };
    expect(
      decideEndpointFailure({ failingSince: 0, failures: 1_000 }, 365 * 24 * HOUR, config, undefined, () => 0).kind,
    ).toBe('backOff');
  });
});

describe('decideEndpointStart', () => {
  it.each<[string, RecordedEndpointState | undefined, EndpointStart]>([
    ['a sink never recorded starts afresh', undefined, { kind: 'fresh' }],
    ['a sink that delivered starts afresh', { disabledReason: null, failingSince: null }, { kind: 'fresh' }],
    [
      'a failure run resumes its clock, the schedule from its start',
      { disabledReason: null, failingSince: T0 - 4 * 24 * HOUR },
      { kind: 'resume', run: { failingSince: T0 - 4 * 24 * HOUR, failures: 0 } },
    ],
    [
      'a run past the give-up rule still gets its probe first',
      { disabledReason: null, failingSince: T0 - 9 * 24 * HOUR },
      { kind: 'resume', run: { failingSince: T0 - 9 * 24 * HOUR, failures: 0 } },
    ],
    [
      'a run recorded in the future begins now',
      { disabledReason: null, failingSince: T0 + HOUR },
      { kind: 'resume', run: { failingSince: T0, failures: 0 } },
    ],
    [
      'a disabled sink stays disabled',
      { disabledReason: 'every attempt failed for 5 days', failingSince: T0 - 5 * 24 * HOUR },
      { kind: 'disabled', reason: 'every attempt failed for 5 days' },
    ],
    [
      'a sink disabled by 410 stays disabled',
      { disabledReason: 'answered 410 Gone', failingSince: null },
      { kind: 'disabled', reason: 'answered 410 Gone' },
    ],
  ])('%s', (_name, recorded, expected) => {
    expect(decideEndpointStart(recorded, T0)).toEqual(expected);
  });

  it('a resumed run past disableAfterSeconds disables at its first failed probe', () => {
    const start = decideEndpointStart({ disabledReason: null, failingSince: T0 - 6 * 24 * HOUR }, T0);
    if (start.kind !== 'resume') throw new Error(start.kind);
    expect(decideEndpointFailure(start.run, T0, DEFAULTS, undefined, () => 0)).toMatchObject({
      kind: 'disable',
      reason: 'every attempt failed for 6 days (1 in a row; disableAfterSeconds 432000)',
    });
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
