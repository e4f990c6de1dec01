/**
 * RFC 9457 problem details as the service sends them (spec section 7). Builders return plain
 * objects; the server adds `instance` and `requestId`, which only it knows.
 */

export const ERRORS_BASE_URL = 'https://errors.skills.example';
export const UPGRADE_URL = 'https://skills.example/billing/upgrade';

export interface FieldError {
  readonly field: string;
  readonly code: string;
  readonly message: string;
}

export interface Problem {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly errors?: readonly FieldError[];
  readonly error?: string;
  readonly upgrade_url?: string;
}

function problem(status: number, slug: string, title: string, detail: string): Problem {
  return { type: `${ERRORS_BASE_URL}/${slug}`, title, status, detail };
}

export function validationProblem(errors: readonly FieldError[]): Problem {
  const fields = [...new Set(errors.map((e) => e.field))].join(', ');
  return {
    ...problem(400, 'validation-error', 'Validation error', `The request is invalid: check ${fields}.`),
    errors,
  };
}

/** Deliberately identical for a missing, malformed, unknown or revoked key (spec 5 rule 9). */
export function invalidCredentialProblem(): Problem {
  return problem(401, 'invalid-credential', 'Invalid credential', 'The request could not be authenticated.');
}

export function insufficientScopeProblem(scope: string): Problem {
  return problem(
    403,
    'insufficient-scope',
    'Insufficient scope',
    `This endpoint requires the ${scope} scope, which the API key does not carry.`,
  );
}

export function trialExpiredProblem(): Problem {
  return {
    ...problem(
      403,
      'trial-expired',
      'Trial expired',
      'The workspace trial has expired; API access is suspended until a workspace admin upgrades.',
    ),
    error: 'trial_expired',
    upgrade_url: UPGRADE_URL,
  };
}

export function notFoundProblem(detail: string): Problem {
  return problem(404, 'not-found', 'Not found', detail);
}

export function methodNotAllowedProblem(method: string): Problem {
  return problem(
    405,
    'method-not-allowed',
    'Method not allowed',
    `${method} is not supported here; the simulator serves GET only.`,
  );
}

export function rateLimitProblem(retryAfterSeconds: number): Problem {
  return problem(
    429,
    'rate-limit-exceeded',
    'Rate limit exceeded',
    `The reads bucket of this API key is exhausted; retry after ${retryAfterSeconds} seconds.`,
  );
}

export function internalErrorProblem(): Problem {
  return problem(500, 'internal-error', 'Internal error', 'An unexpected error occurred; retry later.');
}
