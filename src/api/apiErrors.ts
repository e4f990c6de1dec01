import { ChangefeedError, type ApiErrorCode } from '../errors.js';

export type { ApiErrorCode };
import type { ProblemDetails } from './problemDetails.js';

/**
 * Errors of calls to the service. Each carries a stable `code`; the poller decides what to do
 * from the code alone (see poll/failurePolicy.ts), never from the message.
 */
export abstract class ApiError extends ChangefeedError {
  declare readonly code: ApiErrorCode;
  /** The service's X-Request-Id, when a response arrived: quote it to the service's support. */
  readonly requestId: string | undefined;
  /** Request path without query string and without the key. */
  readonly path: string;

  protected constructor(code: ApiErrorCode, message: string, path: string, requestId?: string, cause?: unknown) {
    super(code, message, { cause });
    this.path = path;
    this.requestId = requestId;
  }
}

/** The service answered with an error status (usually an RFC 9457 problem document). */
export class ApiProblemError extends ApiError {
  readonly status: number;
  readonly problem: ProblemDetails;
  /** Seconds from Retry-After, on 429. */
  readonly retryAfterSeconds: number | undefined;
  /** On 401, the fingerprint (keyFingerprint) of the key the request sent: the one rejected. */
  readonly rejectedKey: string | undefined;

  constructor(args: {
    code: ApiErrorCode;
    message: string;
    path: string;
    status: number;
    problem: ProblemDetails;
    requestId?: string;
    retryAfterSeconds?: number;
    rejectedKey?: string;
  }) {
    super(args.code, args.message, args.path, args.requestId ?? args.problem.requestId);
    this.status = args.status;
    this.problem = args.problem;
    this.retryAfterSeconds = args.retryAfterSeconds;
    this.rejectedKey = args.rejectedKey;
  }
}

/** No usable answer: timeout, refused or reset connection, DNS failure. */
export class ApiTransportError extends ApiError {
  constructor(code: 'API_TIMEOUT' | 'API_CONNECTION', message: string, path: string, cause?: unknown) {
    super(code, message, path, undefined, cause);
  }
}

/** A 2xx answer whose body is not what the spec describes (not JSON, `data` not an array, entry without id). */
export class ApiMalformedResponseError extends ApiError {
  constructor(message: string, path: string, requestId?: string) {
    super('API_MALFORMED_RESPONSE', message, path, requestId);
  }
}

/** A 2xx answer larger than api.maxResponseBytes: reading stopped at the cap, retried like a malformed one. */
export class ApiResponseTooLargeError extends ApiError {
  /**
   * The first bytes of the body (up to RAW_KEPT_BYTES), when the reader kept them: what shows
   * which entry a one-entry page that is still too large holds.
   */
  readonly bodyHead: string | undefined;

  constructor(message: string, path: string, requestId?: string, bodyHead?: string) {
    super('API_RESPONSE_TOO_LARGE', message, path, requestId);
    this.bodyHead = bodyHead;
  }
}

/** The service's request id of a failed request, for logs; undefined for other errors. */
export const requestIdOf = (error: unknown): string | undefined =>
  error instanceof ApiError ? error.requestId : undefined;
