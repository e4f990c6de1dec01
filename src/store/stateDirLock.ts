import Database from 'better-sqlite3';
import {
  closeSync,
  constants,
  fstatSync,
  mkdirSync,
  openSync,
  readSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import { ChangefeedError } from '../errors.js';
import { notPlainFile } from '../readPlainFile.js';
import { StoreError } from './storeError.js';

const LOCK_FILE = 'changefeed.lock';
const PID_FILE = 'changefeed.pid';
/** More than any pid and its newline. */
const PID_FILE_MAX_BYTES = 32;
/** Tries of a lock another start may hold for a moment, and the mean pause between two. */
const ATTEMPTS = 5;
const PAUSE_MS = 50;

/**
 * One daemon per state directory: two on one store would deliver events twice. Node has no
 * flock(2); SQLite's own file locking serves: an exclusive transaction held open on
 * `changefeed.lock` for the daemon's life. The OS drops the lock when the process dies, however
 * it dies, so a stale pid file never blocks a restart.
 */
export class StateDirLock {
  private constructor(
    private readonly db: Database.Database,
    private readonly dir: string,
  ) {}

  /**
   * Takes the lock or throws STATE_DIR_LOCKED naming the pid that holds it. Two starts racing on
   * a fresh directory can each be refused by the other (each keeps the shared lock it took reading
   * the file, exclusive locking mode releasing nothing), and then neither runs: a refused attempt
   * closes its connection, which drops its locks, and tries again after a short random pause
   * (`pause`, blocking: this runs once, before the daemon does anything), so one of them wins. A
   * daemon that holds the directory keeps holding it: the tries end in STATE_DIR_LOCKED within
   * a third of a second.
   */
  static acquire(stateDir: string, pause: (ms: number) => void = pauseSync): StateDirLock {
    for (let attempt = 1; ; attempt++) {
      try {
        return new StateDirLock(lockFileNamingItsHolder(stateDir), stateDir);
      } catch (error) {
        if ((error as { code?: string }).code !== 'SQLITE_BUSY') throw lockFailure(stateDir, error);
        if (attempt === ATTEMPTS)
          throw new ChangefeedError(
            'STATE_DIR_LOCKED',
            `state directory ${stateDir} held by pid ${holderPid(stateDir) ?? '(unknown)'}: another ` +
              `changefeed daemon runs on it; stop that one, or give this one its own stateDir`,
            { cause: error },
          );
        pause(PAUSE_MS * (0.5 + Math.random()));
      }
    }
  }

  /**
   * `held` when it is `stateDir`'s lock and still held (a reload's handover); otherwise
   * `stateDir`'s is taken, and only then `held` let go (the directory changed): a new directory
   * that cannot be taken leaves the old one held, for the reload to go back to it.
   */
  static takeOver(held: StateDirLock | undefined, stateDir: string): StateDirLock {
    if (held?.db.open && sameDirectory(held.dir, stateDir)) return held;
    const taken = StateDirLock.acquire(stateDir);
    held?.release();
    return taken;
  }

  /**
   * Removes the pid file, then lets go of the lock: the other way round, a start that took the
   * lock in between would lose its pid. The lock is let go whatever the removal meets (a directory
   * swapped in, a directory made read-only): a pid file left behind blocks no start, a lock left
   * held blocks every one, and a reload's takeOver would lose the directory it just took.
   */
  release(): void {
    if (!this.db.open) return;
    try {
      rmSync(join(this.dir, PID_FILE), { force: true });
    } catch {
      // Left behind: the next holder's write replaces it or names it (lockFailure).
    } finally {
      this.db.close();
    }
  }
}

/**
 * One directory under two names (a symlink, `..`, a bind mount) is one lock: taking it again
 * beside the one held would be refused (SQLite locks per file, not per connection).
 */
function sameDirectory(a: string, b: string): boolean {
  if (resolve(a) === resolve(b)) return true;
  try {
    const [x, y] = [statSync(a), statSync(b)];
    return x.dev === y.dev && x.ino === y.ino;
  } catch {
    return false;
  }
}

/**
 * The pid the holder wrote, for the refusal's message; undefined when it cannot be read. Read only
 * as far as a pid goes: the message must never hang or fill memory on what the directory holds.
 */
function holderPid(stateDir: string): number | undefined {
  try {
    return withPidFile(join(stateDir, PID_FILE), constants.O_RDONLY, (file) => {
      const head = Buffer.alloc(PID_FILE_MAX_BYTES);
      const text = head.toString('utf8', 0, readSync(file, head)).trim();
      // Decimal digits as written, nothing Number() also reads ('0x1F', '1e3'): a wrong pid would be stopped.
      return /^[1-9][0-9]{0,9}$/.test(text) ? Number(text) : undefined;
    });
  } catch {
    return undefined;
  }
}

/**
 * `use` on the pid file, opened with `flags`, refused (with its `path`, for lockFailure) unless a
 * plain file. Not through a symlink (O_NOFOLLOW): run as root, one planted in the directory would
 * have the pid overwrite whatever file it points to. Not waiting (O_NONBLOCK): a FIFO planted there
 * would block the open, and the whole process with it, until something read or wrote it; without
 * a reader a write open fails ENXIO, otherwise it is refused here. O_NONBLOCK does nothing to a
 * plain file.
 */
function withPidFile<T>(path: string, flags: number, use: (file: number) => T): T {
  const file = openSync(path, flags | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o644);
  try {
    const kind = notPlainFile(fstatSync(file));
    if (kind) throw Object.assign(new Error(`${path} is ${kind}, not a plain file`), { path });
    return use(file);
  } finally {
    closeSync(file);
  }
}

/**
 * The lock file opened, an exclusive transaction begun on it, and this process's pid written
 * beside it; throws SQLITE_BUSY when another holds it. Whatever fails, the connection is closed
 * first: that drops every lock it took, so a racing start can take the file, and none is left to
 * the garbage collector, which would keep the directory locked against this same process's next
 * try (a reload, an in-process run) when only the pid could not be written.
 */
function lockFileNamingItsHolder(stateDir: string): Database.Database {
  mkdirSync(stateDir, { recursive: true });
  const db = new Database(join(stateDir, LOCK_FILE));
  try {
    db.pragma('busy_timeout = 0');
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('CREATE TABLE IF NOT EXISTS held (pid INTEGER)');
    db.exec('BEGIN EXCLUSIVE');
    withPidFile(join(stateDir, PID_FILE), constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC, (file) =>
      writeFileSync(file, `${process.pid}\n`),
    );
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

/**
 * Why the directory could not be locked, other than another daemon holding it: SQLite's and the
 * file system's own errors name neither the file nor what to do (SQLITE_NOTADB: "file is not a
 * database"). Each names what failed: the directory (a file in its place), the lock file or the
 * pid file. Nothing but the lock, or the pid, is kept in those two, so one in the way can go.
 */
function lockFailure(stateDir: string, error: unknown): StoreError {
  const code = (error as { code?: unknown }).code;
  const why = `${(error as Error).message}${typeof code === 'string' ? ` (${code})` : ''}`;
  const writable = 'check that stateDir is a directory this user can write, with free space';
  // The file system's errors carry the path they failed on; SQLite's carry none (the lock file).
  const path = (error as { path?: unknown }).path;
  const pidFile = join(stateDir, PID_FILE);
  const lockFile = join(stateDir, LOCK_FILE);
  const message =
    path === pidFile
      ? `cannot write the pid of the state directory's holder to ${pidFile}: ${why}; the file holds nothing ` +
        `but that pid: remove it if it is not a plain file (a directory, a symlink, a FIFO), and ${writable}`
      : typeof path === 'string' && path !== lockFile
        ? `cannot make the state directory ${stateDir}: ${why}; stateDir must name a directory this user can ` +
          'create and write, not a file (nor one under a file)'
        : `cannot lock the state directory with ${lockFile}: ${why}; the file holds nothing but the lock: remove ` +
          `it if it is not a SQLite file (a directory, other data), and ${writable}`;
  return new StoreError(message, error);
}

function pauseSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
