import type Database from 'better-sqlite3';
import type { StoreActivity } from '../storeActivity.js';
import type { Db } from './database.js';

type Statement<P extends unknown[] | object, R> = Database.Statement<P extends unknown[] ? P : [P], R>;

const prepared = new WeakMap<Db, Map<string, Database.Statement>>();
const activities = new WeakMap<Db, StoreActivity>();

/** Counts the work of every tenant on `db` in `activity` (the backend's, for its metrics). */
export function countActivity(db: Db, activity: StoreActivity): void {
  activities.set(db, activity);
}

/**
 * One tenant's way into a SQLite connection that the tenants of a process share. Every table is
 * keyed by tenant first, and every statement names `@tenant` or takes the tenant as its first
 * parameter.
 *
 * Statements are prepared on first use and shared by every tenant of the connection (about 8 KB
 * of native memory each). better-sqlite3 runs a statement to completion before returning, so
 * sharing one is safe for `run`, `get` and `all` (not for an `iterate` left open).
 */
export class TenantConnection {
  constructor(
    readonly db: Db,
    readonly tenant: string,
  ) {}

  /**
   * The prepared statement of `sql`, counted as one execution (a step that runs it once per row,
   * inside its transaction, counts once). Outside a transaction it is one of its own (autocommit).
   */
  statement<P extends unknown[] | object = unknown[], R = unknown>(sql: string): Statement<P, R> {
    const activity = activities.get(this.db);
    if (activity) {
      activity.statements++;
      if (!this.db.inTransaction) activity.transactions++;
    }
    let statements = prepared.get(this.db);
    if (!statements) {
      statements = new Map();
      prepared.set(this.db, statements);
    }
    let statement = statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      statements.set(sql, statement);
    }
    return statement as unknown as Statement<P, R>;
  }

  /** `work` in one transaction (nested calls become savepoints, as better-sqlite3 does). */
  transaction<T>(work: () => T): T {
    this.countTransaction();
    return this.db.transaction(work)();
  }

  /** One transaction begun (a nested one is a savepoint of the one already counted). */
  countTransaction(): void {
    const activity = activities.get(this.db);
    if (activity && !this.db.inTransaction) activity.transactions++;
  }
}
