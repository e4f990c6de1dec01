import { ChangefeedError } from '../errors.js';

/**
 * SQLSTATEs of PostgreSQL that say the database cannot take the statement now but may later,
 * rather than that the statement is wrong: class 08 (connection exception), class 53
 * (insufficient resources: 53100 disk full, 53300 too many connections), class 58 (system
 * error: I/O), admin or crash shutdown, "cannot connect now", database dropped (57P01-57P04),
 * a statement cancelled by `statement_timeout` (57014: a hung or overloaded database) and a
 * read-only standby after a failover (25006).
 */
const POSTGRES_UNAVAILABLE_STATE = /^(08...|53...|58...|57P0[1-4]|57014|25006)$/;

/**
 * Errors that mean the store cannot be written now but may be later. SQLite and the file system:
 * a full disk (SQLITE_FULL, ENOSPC), a read-only one (SQLITE_READONLY*, EROFS), an I/O error, a
 * file another process holds locked past the busy timeout (SQLITE_BUSY*, SQLITE_LOCKED*).
 * PostgreSQL: the database shutting down, full, read-only or not answering in time.
 */
export function isStorageError(error: unknown): boolean {
  if (error instanceof StoreUnavailableError) return true;
  if (isDatabaseUnavailable(error)) return true;
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string') return false;
  return (
    code === 'SQLITE_FULL' ||
    code.startsWith('SQLITE_IOERR') ||
    code.startsWith('SQLITE_BUSY') ||
    code.startsWith('SQLITE_LOCKED') ||
    code.startsWith('SQLITE_READONLY') ||
    code === 'SQLITE_CANTOPEN' ||
    code === 'ENOSPC' ||
    code === 'EROFS'
  );
}

/**
 * A PostgreSQL error of a database that cannot serve now; see isStorageError. Socket errors and
 * node-postgres's code-less connection errors are told apart by the PostgreSQL store itself
 * (postgres/connectionFailure.ts): here they could as well be a sink's.
 */
function isDatabaseUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return error instanceof Error && typeof code === 'string' && POSTGRES_UNAVAILABLE_STATE.test(code);
}

/** How long polling and delivery wait before trying a store that did not answer again. */
export const STORE_RETRY_MS = 2_000;

/** The store cannot serve now but may later; the message is already phrased for the operator. */
export class StoreUnavailableError extends ChangefeedError {
  constructor(message: string, cause?: unknown) {
    super('STORE_UNAVAILABLE', message, { cause });
  }
}

/**
 * Every connection of the store's pool stayed in use past the store's wait limit: the database
 * answers, but this replica asks more of it than its connections carry. Back-pressure, not an
 * outage: the work is tried again shortly, nothing is recorded as the store's problem.
 */
export class StoreBusyError extends ChangefeedError {
  constructor(message: string) {
    super('STORE_BUSY', message);
  }
}

/** A StoreBusyError, however it was passed on. */
export function isStoreBusy(error: unknown): boolean {
  return error instanceof ChangefeedError && error.code === 'STORE_BUSY';
}

/**
 * Whether the store could be written last time it was tried. A store that refuses (a full disk,
 * a database away) is an outage to wait out, not a reason to crash: polling and delivery pause,
 * readiness says why, and the next successful write (each pause ends with another try) clears it.
 */
export class StoreHealth {
  private current: string | undefined;

  /**
   * Records a storage error; returns false (and records nothing) for any other error. A busy
   * pool (isStoreBusy) is waited for like a storage error (true) but is not the store's problem:
   * nothing is recorded, and readiness does not change.
   */
  record(error: unknown, location: string): boolean {
    if (isStoreBusy(error)) return true;
    if (!isStorageError(error)) return false;
    // Already phrased for the operator by the store that threw it: kept as is, not wrapped again.
    if (error instanceof StoreUnavailableError) {
      this.current = error.message;
      return true;
    }
    const reason = (error as Error).message;
    const code = (error as { code?: unknown }).code;
    if (isDatabaseUnavailable(error)) this.current = databaseProblem(location, reason, code);
    else if (/full|ENOSPC/i.test(reason) || code === 'SQLITE_FULL')
      this.current = `the disk holding ${location} is full (${reason}); polling and delivery pause until space returns`;
    else if (typeof code === 'string' && /^SQLITE_(BUSY|LOCKED)/.test(code))
      this.current =
        `the store ${location} is locked by another process (${reason}); polling and delivery pause until ` +
        'it lets go (look for a sqlite3 shell or a backup holding a transaction open)';
    else this.current = `the store ${location} cannot be written (${reason}); polling and delivery pause until it can`;
    return true;
  }

  clear(): void {
    this.current = undefined;
  }

  /** Why the store cannot be written, while it cannot. */
  get problem(): string | undefined {
    return this.current;
  }
}

/**
 * What to do about a database that refuses more connections (53300: the server's max_connections,
 * or the role's CONNECTION LIMIT, reached), which waiting alone cures only if something else lets go.
 */
export const CONNECTION_LIMIT_ADVICE =
  'each replica holds up to store.maxConnections connections and 2 more for its tenant leases (one more ' +
  "while it opens the store): raise the server's max_connections or the role's CONNECTION LIMIT, lower " +
  'store.maxConnections, or run fewer replicas';

/** Why a PostgreSQL store cannot serve, for readiness and logs: names the database, not a disk. */
export function databaseProblem(location: string, reason: string, code?: unknown): string {
  const pause = 'polling and delivery pause until it';
  if (code === '53300')
    return `the database ${location} refuses more connections (${reason}); ${pause} takes one; ${CONNECTION_LIMIT_ADVICE}`;
  if (code === '28000' || code === '28P01')
    return (
      `the database ${location} refuses this replica's login (${reason}); ${pause} lets the role in again ` +
      '(check the role is allowed to log in and the password in store.url)'
    );
  if (code === '53100') return `the database ${location} is out of disk space (${reason}); ${pause} has space again`;
  if (code === '25006') return `the database ${location} is read-only (${reason}); ${pause} accepts writes again`;
  if (code === '57014') return `the database ${location} did not answer in time (${reason}); ${pause} answers`;
  if (typeof code === 'string' && /^53/.test(code))
    return `the database ${location} is short of resources (${reason}); ${pause} can serve again`;
  return `the database ${location} cannot be reached (${reason}); ${pause} answers again`;
}
