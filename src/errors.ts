/**
 * Base class of every error this project throws on purpose.
 *
 * Callers match on `code` (stable, documented in docs/operations.md), never on the message,
 * which is written for the operator and says what to do.
 */
export class ChangefeedError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
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
