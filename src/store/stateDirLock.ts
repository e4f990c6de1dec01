import Database from 'better-sqlite3';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ChangefeedError } from '../errors.js';
import { StoreError } from './storeError.js';

const LOCK_FILE = 'changefeed.lock';
const PID_FILE = 'changefeed.pid';
/** Tries of a lock another start may hold for a moment, and the mean pause between two. */
const ATTEMPTS = 5;
const PAUSE_MS = 50;

/**
 * One daemon per state directory. Two daemons on one store sent ~90% of webhooks twice, and two
 * racing starts crashed on a migration. Node has no flock(2); SQLite's own file locking serves:
 * an exclusive transaction held open on `changefeed.lock` for the daemon's life. The OS drops the
 * lock when the process dies, however it dies, so a stale pid file never blocks a restart.
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
   * `held` when it is `stateDir`'s lock and still held (a reload's handover); otherwise `held` is
   * let go (the directory changed) and `stateDir`'s is taken.
   */
  static takeOver(held: StateDirLock | undefined, stateDir: string): StateDirLock {
    if (held?.db.open && resolve(held.dir) === resolve(stateDir)) return held;
    held?.release();
    return StateDirLock.acquire(stateDir);
  }

  release(): void {
    if (!this.db.open) return;
    rmSync(join(this.dir, PID_FILE), { force: true });
    this.db.close();
  }
}

function holderPid(stateDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(stateDir, PID_FILE), 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
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
    writeFileSync(join(stateDir, PID_FILE), `${process.pid}\n`);
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

/**
 * Why the directory could not be locked, other than another daemon holding it: SQLite's and the
 * file system's own errors name neither the file nor what to do (SQLITE_NOTADB: "file is not a
 * database"). Nothing but the lock is kept in the file, so one that is not SQLite can go.
 */
function lockFailure(stateDir: string, error: unknown): StoreError {
  const file = join(stateDir, LOCK_FILE);
  const code = (error as { code?: unknown }).code;
  return new StoreError(
    `cannot lock the state directory with ${file}: ${(error as Error).message}` +
      `${typeof code === 'string' ? ` (${code})` : ''}; the file holds nothing but the lock: remove it if it ` +
      'is not a SQLite file (a directory, other data), and check that stateDir is a directory this user can ' +
      'write, with free space',
    error,
  );
}

function pauseSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
