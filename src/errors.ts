/**
 * Every code an error of this project can carry: stable, documented in docs/operations.md (a
 * test keeps the two in step), and a union of literals so a misspelt code does not compile.
 */
export const ERROR_CODES = [
  'ABORTED',
  'CONFIG_INVALID',
  'USAGE',
  'PORT_IN_USE',
  'STATE_DIR_LOCKED',
  'STORE_ERROR',
  'STORE_MISSING',
  'STORE_REFUSED',
  'STORE_UNAVAILABLE',
  'STORE_BUSY',
  'STORE_MIGRATION_REFUSED',
  'STORE_SCHEMA_PRERELEASE',
  'FORBIDDEN_FILTER',
  'WINDOW_TOO_DENSE',
  'VERSION_LOG_TOO_LONG',
  'OVERSIZED_ENTRIES',
  'API_INVALID_CREDENTIAL',
  'API_INSUFFICIENT_SCOPE',
  'API_INSUFFICIENT_PERMISSIONS',
  'API_TRIAL_EXPIRED',
  'API_NOT_FOUND',
  'API_VALIDATION',
  'API_RATE_LIMITED',
  'API_SERVER_ERROR',
  'API_HTTP_ERROR',
  'API_TIMEOUT',
  'API_CONNECTION',
  'API_MALFORMED_RESPONSE',
  'API_RESPONSE_TOO_LARGE',
  'SINK_UNAVAILABLE',
  'SINK_BACKOFF',
  'SINK_PARTIAL_FAILURE',
  'SINK_REJECTED',
  'SINK_DISABLED',
  'SINK_ENDPOINT_FAILING',
  'TENANT_NAME_INVALID',
  'TENANT_DUPLICATE_API_KEY',
  'TENANT_KEY_OF_REMOVED_TENANT',
  'TENANTS_DIR_UNREADABLE',
  'TENANTS_DIR_EMPTY',
  'TENANT_FILE_DIFFERS',
  'LEASE_LOST',
  'LEASE_HELD',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];
export type ApiErrorCode = Extract<ErrorCode, `API_${string}`>;

/**
 * Base class of every error this project throws on purpose. Callers match on `code`, never on the
 * message, which is written for the operator and says what to do.
 */
export class ChangefeedError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Invalid configuration: `path` names the offending field, e.g. `sinks[1].path`. */
export class ConfigError extends ChangefeedError {
  readonly issues: readonly { path: string; message: string }[];

  constructor(message: string, issues: readonly { path: string; message: string }[] = []) {
    super('CONFIG_INVALID', message);
    this.issues = issues;
  }
}

/** Thrown by waits that were cut short because the owner is shutting down. */
export class AbortedError extends ChangefeedError {
  constructor(message = 'operation aborted') {
    super('ABORTED', message);
  }
}

/** The code of one of our errors; undefined for anything else (a Node error's `code` is not ours). */
export function errorCodeOf(error: unknown): ErrorCode | undefined {
  return error instanceof ChangefeedError ? error.code : undefined;
}

export function isAbortError(error: unknown): boolean {
  return (
    error instanceof AbortedError ||
    (error instanceof Error && (error.name === 'AbortError' || (error as { code?: string }).code === 'ABORT_ERR'))
  );
}

/** One-line description of any thrown value, for logs and stored `last_error` columns. */
export function describeError(error: unknown): string {
  if (error instanceof ChangefeedError) return `${error.code}: ${error.message}`;
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}
