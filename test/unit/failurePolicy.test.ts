import { describe, expect, it } from 'vitest';
import { ApiProblemError, ApiTransportError } from '../../src/api/apiErrors.js';
import { parseProblemDetails } from '../../src/api/problemDetails.js';
import { ConfigError } from '../../src/errors.js';
import {
  classifyPollFailure,
  ONCE_ATTEMPTS,
  onceAfterFailure,
  pollRetryDelayMs,
  type FailureAction,
} from '../../src/poll/failurePolicy.js';
import { OversizedEntriesError } from '../../src/poll/sizedPageReader.js';
import { WindowTooDenseError } from '../../src/poll/windowWalker.js';
import { VersionLogTooLongError } from '../../src/poll/versionLogWalker.js';

const problem = (
  status: number,
  code: ConstructorParameters<typeof ApiProblemError>[0]['code'],
  body: object = {},
  retryAfterSeconds?: number,
) =>
  new ApiProblemError({
    code,
    message: `status ${status}`,
    path: '/api/v1/careers/c-1/activity',
    status,
    problem: parseProblemDetails(status, JSON.stringify(body)),
    retryAfterSeconds,
  });

describe('what a failed poll means', () => {
  it('pauses every poll on a rejected credential, longer after each failure, capped at 15 minutes', () => {
    const pauses = [0, 1, 2, 3, 4, 8].map((n) =>
      classifyPollFailure(problem(401, 'API_INVALID_CREDENTIAL'), 'career', n),
    );
    expect(pauses.map((p) => (p.kind === 'pauseAll' ? p.pauseMs / 60_000 : -1))).toEqual([1, 2, 4, 8, 15, 15]);
  });

  it('pauses an hour when the trial expired', () => {
    expect(classifyPollFailure(problem(403, 'API_TRIAL_EXPIRED'), 'career', 0)).toMatchObject({
      kind: 'pauseAll',
      pauseMs: 3_600_000,
    });
  });

  it('disables the whole kind of log for a missing scope and names the scope', () => {
    const action = classifyPollFailure(problem(403, 'API_INSUFFICIENT_SCOPE'), 'skill', 0);
    expect(action).toMatchObject({ kind: 'disableKind' });
    expect(action.reason).toContain('skills:read');
  });

  it('stops watching a deleted career, but only disables the company-wide log on 404', () => {
    expect(classifyPollFailure(problem(404, 'API_NOT_FOUND'), 'career', 0)).toMatchObject({
      kind: 'disableLog',
      status: 'gone',
    });
    const company = classifyPollFailure(problem(404, 'API_NOT_FOUND'), 'identity_provider', 0);
    expect(company).toMatchObject({ kind: 'disableLog', status: 'disabled' });
    expect(company.reason).toContain('api.baseUrl');
  });

  it('does not repeat a request the service rejected as invalid, and quotes the field errors', () => {
    const body = {
      type: 'https://errors.example/validation-error',
      errors: [{ field: 'from', code: 'invalid_timestamp', message: 'bad' }],
    };
    const action = classifyPollFailure(problem(400, 'API_VALIDATION', body), 'career', 0);
    expect(action).toMatchObject({ kind: 'disableLog', status: 'disabled' });
    expect(action.reason).toContain('from: invalid_timestamp (bad)');
  });

  it('retries server errors, timeouts and malformed bodies; a 429 waits on the budget only', () => {
    expect(classifyPollFailure(problem(503, 'API_SERVER_ERROR'), 'career', 0)).toMatchObject({
      kind: 'retry',
      budgetPause: false,
    });
    expect(classifyPollFailure(new ApiTransportError('API_TIMEOUT', 'slow', '/x'), 'career', 0)).toMatchObject({
      kind: 'retry',
    });
    expect(classifyPollFailure(problem(429, 'API_RATE_LIMITED', {}, 30), 'career', 0)).toMatchObject({
      kind: 'retry',
      budgetPause: true,
    });
  });

  it('treats a missing key file as a credential problem, not a network one', () => {
    const action = classifyPollFailure(
      new ConfigError('cannot read secret file /run/key: it does not exist'),
      'career',
      0,
    );
    expect(action).toMatchObject({ kind: 'pauseAll', pauseMs: 60_000 });
  });

  it('does not retry what retrying cannot fix and what costs reads each time', () => {
    const window = { from: 0, to: 1 };
    expect(classifyPollFailure(new WindowTooDenseError('career', 'c-1', window), 'career', 0)).toMatchObject({
      kind: 'disableLog',
      status: 'disabled',
    });
    expect(classifyPollFailure(new VersionLogTooLongError('s-1'), 'skill', 0)).toMatchObject({
      kind: 'disableLog',
      status: 'disabled',
    });
    const oversized = new OversizedEntriesError({
      log: 'career',
      objectId: 'c-1',
      maxResponseBytes: 16_777_216,
      position: 'offset 70 of 2026-11-27T00:00:00.000Z..2026-11-27T01:00:00.000Z',
    });
    expect(classifyPollFailure(oversized, 'career', 0)).toMatchObject({ kind: 'disableLog', status: 'disabled' });
    expect(onceAfterFailure(classifyPollFailure(oversized, 'career', 0), 1)).toBe('report');
  });

  it('backs a failing log off exponentially from 5 s to 5 min with full jitter', () => {
    expect([1, 2, 3, 10].map((n) => pollRetryDelayMs(n, () => 0.999_999))).toEqual([4_999, 9_999, 19_999, 299_999]);
    expect(pollRetryDelayMs(3, () => 0)).toBe(1_000);
  });
});

describe('onceAfterFailure (run --once gives up when the failure policy says so)', () => {
  const retry: FailureAction = { kind: 'retry', reason: '503', budgetPause: false };
  it.each<[string, FailureAction, number, ReturnType<typeof onceAfterFailure>]>([
    ['a transient failure is tried again', retry, 1, 'retry'],
    ['still, on the last attempt but one', retry, ONCE_ATTEMPTS - 1, 'retry'],
    ['and reported once the attempts are spent', retry, ONCE_ATTEMPTS, 'report'],
    ['a 429 is tried again after the budget pause', { ...retry, budgetPause: true }, 1, 'retry'],
    [
      'a key-wide pause is reported at once',
      { kind: 'pauseAll', reason: 'key rejected', pauseMs: 60_000 },
      1,
      'report',
    ],
    ['a missing scope is reported at once', { kind: 'disableKind', reason: 'scope' }, 1, 'report'],
    ['a disabled log is reported at once', { kind: 'disableLog', status: 'disabled', reason: '403' }, 1, 'report'],
    [
      'a deleted object is handled, not a failed sweep',
      { kind: 'disableLog', status: 'gone', reason: '404' },
      1,
      'handled',
    ],
  ])('%s', (_name, action, attempt, expected) => {
    expect(onceAfterFailure(action, attempt)).toBe(expected);
  });
});
