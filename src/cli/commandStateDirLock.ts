import { ChangefeedError } from '../errors.js';
import { StateDirLock } from '../store/stateDirLock.js';

/**
 * Makes a command the one deliverer of a SQLite store, as the daemon is while it runs: the
 * state directory's lock, which the daemon holds for its whole life, taken for the command's run.
 * Delivering beside the daemon would send the outbox's rows twice and out of order, as on
 * PostgreSQL without the tenant's lease (commandLease.ts). Refused with STATE_DIR_LOCKED, saying
 * what to do, while a daemon holds it; a daemon started meanwhile is refused in turn until the
 * command ends.
 */
export function takeCommandStateDirLock(stateDir: string, command: string): StateDirLock {
  try {
    return StateDirLock.acquire(stateDir);
  } catch (error) {
    if (!(error instanceof ChangefeedError) || error.code !== 'STATE_DIR_LOCKED') throw error;
    throw new ChangefeedError(
      'STATE_DIR_LOCKED',
      `a changefeed daemon runs on state directory ${stateDir} and delivers its outbox; ` +
        `queue for it with ${command} --queue-only instead, or stop the daemon first`,
      { cause: error },
    );
  }
}
