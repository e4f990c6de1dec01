import { ChangefeedError } from '../errors.js';

/**
 * SQLite and file-system errors that mean the store cannot be written now but may be later: a full
 * disk (SQLITE_FULL, ENOSPC), a read-only one (SQLITE_READONLY*, EROFS), an I/O error.
 */
export function isStorageError(error: unknown): boolean {
  if (error instanceof StoreUnavailableError) return true;
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string') return false;
  return (
    code === 'SQLITE_FULL' ||
    code.startsWith('SQLITE_IOERR') ||
    code.startsWith('SQLITE_READONLY') ||
    code === 'SQLITE_CANTOPEN' ||
    code === 'ENOSPC' ||
    code === 'EROFS'
  );
}

/** A write to the store failed for want of space or a writable disk; polling pauses until it works again. */
export class StoreUnavailableError extends ChangefeedError {
  constructor(message: string, cause?: unknown) {
    super('STORE_UNAVAILABLE', message, { cause });
  }
}

/**
 * Whether the store could be written last time it was tried. A state directory on a disk that
 * filled up crashed the daemon with an uncaught SQLITE_FULL; now polling and delivery pause,
 * readiness says why, and the next successful write (each pause ends with another try) clears it.
 */
export class StoreHealth {
  private current: string | undefined;

  /** Records a storage error; returns false (and records nothing) for any other error. */
  record(error: unknown, file: string): boolean {
    if (!isStorageError(error)) return false;
    const reason = (error as Error).message;
    this.current =
      /full|ENOSPC/i.test(reason) || (error as { code?: string }).code === 'SQLITE_FULL'
        ? `the disk holding ${file} is full (${reason}); polling and delivery pause until space returns`
        : `the store ${file} cannot be written (${reason}); polling and delivery pause until it can`;
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
