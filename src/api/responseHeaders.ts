import { dateHeader, parseRetryAfter } from '../retryAfter.js';
import { headerValue } from './responseBody.js';

/**
 * What the service tells about its clock and the reads bucket in every response (spec 8 rules 1-2).
 * Unparseable values become undefined rather than errors: a missing header must not fail a poll.
 */
export interface ResponseMeta {
  status: number;
  requestId: string | undefined;
  /** RateLimit-Limit: the bucket's hourly allowance. */
  limit: number | undefined;
  /** RateLimit-Remaining: requests left in the window. */
  remaining: number | undefined;
  /** RateLimit-Reset: seconds until the window resets. */
  resetSeconds: number | undefined;
  /**
   * Retry-After in seconds (integer or HTTP-date form). An HTTP-date is measured from the same
   * answer's Date when it has one: both are the service's clock, so a skewed local clock neither
   * stretches the wait (ours behind) nor turns it into a date already past (ours ahead).
   */
  retryAfterSeconds: number | undefined;
  /** The service's clock (Date header), epoch ms. */
  serverDate: number | undefined;
  /** Our clock when the response's headers arrived, epoch ms. */
  receivedAt: number;
  /**
   * Our clock when the request left (after its budget slot), epoch ms; undefined when unknown.
   * The service stamped `Date` between the two: with it, a `Date` bounds the service's clock
   * from both sides.
   */
  sentAt?: number;
}

type HeaderBag = Record<string, string | string[] | undefined>;
const header = (headers: HeaderBag, name: string): string | undefined => headerValue(headers[name]);

function nonNegativeInteger(value: string | undefined): number | undefined {
  if (value === undefined || !/^\s*\d{1,15}\s*$/.test(value)) return undefined;
  return Number.parseInt(value, 10);
}

export function readResponseMeta(
  status: number,
  headers: HeaderBag,
  receivedAt: number,
  sentAt?: number,
): ResponseMeta {
  const serverDate = dateHeader(header(headers, 'date'));
  return {
    status,
    requestId: header(headers, 'x-request-id'),
    limit: nonNegativeInteger(header(headers, 'ratelimit-limit')),
    remaining: nonNegativeInteger(header(headers, 'ratelimit-remaining')),
    resetSeconds: nonNegativeInteger(header(headers, 'ratelimit-reset')),
    retryAfterSeconds: parseRetryAfter(header(headers, 'retry-after'), receivedAt, serverDate),
    serverDate,
    receivedAt,
    ...(sentAt !== undefined && { sentAt }),
  };
}
