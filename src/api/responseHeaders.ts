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

/** The most of a request id kept: ids run to a few dozen characters. */
const REQUEST_ID_LENGTH = 200;

/**
 * The service's request id (X-Request-Id, or a problem document's `requestId`) as it is quoted in
 * every error, log line and quarantine record of its answer, and shown by `status`: its first
 * REQUEST_ID_LENGTH characters (undici takes a header of up to 16 KiB), printable ASCII as sent,
 * anything else as a \uXXXX escape (a header's bytes 0x80-0xFF arrive as latin1 characters, C1
 * controls among them, which a terminal acts on), so six times that at most.
 */
export function quotedRequestId(value: string): string | undefined {
  // An empty id is none: kept, it read "(request )" and stood in for the problem document's own id.
  if (value.trim() === '') return undefined;
  const kept = value.length > REQUEST_ID_LENGTH ? `${value.slice(0, REQUEST_ID_LENGTH)}... (cut)` : value;
  return kept.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The answer's X-Request-Id, as quotedRequestId keeps it. */
export function requestIdHeader(headers: HeaderBag): string | undefined {
  const value = header(headers, 'x-request-id');
  return value === undefined ? undefined : quotedRequestId(value);
}

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
    requestId: requestIdHeader(headers),
    limit: nonNegativeInteger(header(headers, 'ratelimit-limit')),
    remaining: nonNegativeInteger(header(headers, 'ratelimit-remaining')),
    resetSeconds: nonNegativeInteger(header(headers, 'ratelimit-reset')),
    retryAfterSeconds: parseRetryAfter(header(headers, 'retry-after'), receivedAt, serverDate),
    serverDate,
    receivedAt,
    ...(sentAt !== undefined && { sentAt }),
  };
}
