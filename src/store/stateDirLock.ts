import Database from 'better-sqlite3';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ChangefeedError } from '../errors.js';

const LOCK_FILE = 'changefeed.lock';
const PID_FILE = 'changefeed.pid';

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

  /** Takes the lock or throws STATE_DIR_LOCKED naming the pid that holds it. */
  static acquire(stateDir: string): StateDirLock {
    mkdirSync(stateDir, { recursive: true });
    const db = new Database(join(stateDir, LOCK_FILE));
    try {
      db.pragma('busy_timeout = 0');
      db.pragma('locking_mode = EXCLUSIVE');
      db.exec('CREATE TABLE IF NOT EXISTS held (pid INTEGER)');
      db.exec('BEGIN EXCLUSIVE');
    } catch (error) {
      db.close();
      if ((error as { code?: string }).code !== 'SQLITE_BUSY') throw error;
      throw new ChangefeedError(
        'STATE_DIR_LOCKED',
        `state directory ${stateDir} held by pid ${holderPid(stateDir) ?? '(unknown)'}: another ` +
          `changefeed daemon runs on it; stop that one, or give this one its own stateDir`,
        { cause: error },
      );
    }
    writeFileSync(join(stateDir, PID_FILE), `${process.pid}\n`);
    return new StateDirLock(db, stateDir);
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
