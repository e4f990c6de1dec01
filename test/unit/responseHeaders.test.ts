import { describe, expect, it } from 'vitest';
import { readResponseMeta } from '../../src/api/responseHeaders.js';
import { parseRetryAfter } from '../../src/retryAfter.js';

const NOW = Date.UTC(2026, 10, 22, 12, 0, 0);

describe('readResponseMeta', () => {
  it('reads the RateLimit triple, X-Request-Id and Date of a normal response', () => {
    const meta = readResponseMeta(
      200,
      {
        'ratelimit-limit': '1000',
        'ratelimit-remaining': '997',
        'ratelimit-reset': '1800',
        'x-request-id': 'req-7',
        date: 'Sun, 22 Nov 2026 11:59:58 GMT',
      },
      NOW,
    );
    expect(meta).toEqual({
      status: 200,
      requestId: 'req-7',
      limit: 1000,
      remaining: 997,
      resetSeconds: 1800,
      retryAfterSeconds: undefined,
      serverDate: NOW - 2_000,
      receivedAt: NOW,
    });
  });

  it('leaves everything undefined when the headers are missing', () => {
    expect(readResponseMeta(200, {}, NOW)).toEqual({
      status: 200,
      requestId: undefined,
      limit: undefined,
      remaining: undefined,
      resetSeconds: undefined,
      retryAfterSeconds: undefined,
      serverDate: undefined,
      receivedAt: NOW,
    });
  });

  it('turns garbage into undefined rather than NaN or a guess', () => {
    const meta = readResponseMeta(
      200,
      {
        'ratelimit-limit': 'lots',
        'ratelimit-remaining': '-3',
        'ratelimit-reset': '1.5',
        'retry-after': 'soon',
        date: 'yesterday',
      },
      NOW,
    );
    expect(meta).toMatchObject({
      limit: undefined,
      remaining: undefined,
      resetSeconds: undefined,
      retryAfterSeconds: undefined,
      serverDate: undefined,
    });
  });

  it('accepts an integer surrounded by whitespace and 0 remaining', () => {
    expect(readResponseMeta(200, { 'ratelimit-limit': ' 1000 ', 'ratelimit-remaining': '0' }, NOW)).toMatchObject({
      limit: 1000,
      remaining: 0,
    });
  });

  it('takes the first value of a repeated header', () => {
    expect(readResponseMeta(200, { 'ratelimit-remaining': ['5', '9'] }, NOW).remaining).toBe(5);
  });

  it('reads Retry-After on a 429 in seconds', () => {
    expect(readResponseMeta(429, { 'retry-after': '120' }, NOW).retryAfterSeconds).toBe(120);
  });

  // The service dates Retry-After by its own clock: read against ours, a local clock an hour
  // behind would turn "in 90 s" into an hour's pause, and one ahead into a date already past.
  it.each([
    ['our clock an hour behind the service', 'Sun, 22 Nov 2026 13:00:00 GMT', 'Sun, 22 Nov 2026 13:01:30 GMT'],
    ['our clock ten minutes ahead of the service', 'Sun, 22 Nov 2026 11:50:00 GMT', 'Sun, 22 Nov 2026 11:51:30 GMT'],
  ])('reads an HTTP-date Retry-After against the same answer’s Date, with %s', (_, date, retryAfter) => {
    expect(readResponseMeta(429, { date, 'retry-after': retryAfter }, NOW).retryAfterSeconds).toBe(90);
  });

  it('reads an HTTP-date Retry-After against our clock when the answer has no usable Date', () => {
    const retryAfter = 'Sun, 22 Nov 2026 12:01:30 GMT';
    expect(readResponseMeta(429, { 'retry-after': retryAfter }, NOW).retryAfterSeconds).toBe(90);
    expect(readResponseMeta(429, { date: 'yesterday', 'retry-after': retryAfter }, NOW).retryAfterSeconds).toBe(90);
  });
});

describe('parseRetryAfter', () => {
  it('reads delta-seconds', () => {
    expect(parseRetryAfter('0', NOW)).toBe(0);
    expect(parseRetryAfter('3600', NOW)).toBe(3600);
  });

  it('reads an HTTP-date as seconds from now, rounded up', () => {
    expect(parseRetryAfter('Sun, 22 Nov 2026 12:01:30 GMT', NOW)).toBe(90);
    expect(parseRetryAfter('Sun, 22 Nov 2026 12:01:30 GMT', NOW + 500)).toBe(90);
  });

  it('reads an HTTP-date in the past as 0', () => {
    expect(parseRetryAfter('Sun, 22 Nov 2026 11:00:00 GMT', NOW)).toBe(0);
  });

  it('is undefined when absent or unparseable', () => {
    expect(parseRetryAfter(undefined, NOW)).toBeUndefined();
    expect(parseRetryAfter('in a minute', NOW)).toBeUndefined();
    expect(parseRetryAfter('', NOW)).toBeUndefined();
  });

  // "-5" parsed as the year -5 by Date.parse, so a 429 with it meant no pause at all.
  it.each(['-5', '-2026', '1e3', '12.5', 'Infinity', '99999999999999999999'])(
    'is undefined for the nonsense %j, so the fallback pause applies',
    (value) => {
      expect(parseRetryAfter(value, NOW)).toBeUndefined();
    },
  );
});
