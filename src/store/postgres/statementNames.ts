import { createHash } from 'node:crypto';
import type pg from 'pg';

/**
 * Most statement texts one pool prepares, hence most prepared statements on any of its
 * connections. The store sends about seventy distinct texts, each built from constants (lists
 * go as arrays, `unnest($n::text[])`); a text past the bound is sent unnamed.
 */
export const MAX_PREPARED_STATEMENTS = 256;

/**
 * The names under which a pool's connections prepare the store's statements: a named statement
 * is parsed and planned once per connection (node-postgres remembers which it prepared on each),
 * an unnamed one on every execution: that planning is most of what a poll's statements cost the
 * database.
 *
 * A name is the hash of the text, so a name always means one text and a text one name. A change
 * of what a statement returns fails it on each connection that prepared it: the store then
 * destroys that connection and tries once more unnamed (isStalePlan). A change of a column a
 * parameter took its type from fails it for good on that connection: docs/operations.md forbids
 * both. Named: statements with parameters and a single command; the others go unnamed.
 */
export class StatementNames {
  private readonly names = new Map<string, string>();
  /** Until when (`now`) EXECUTE is off after a name the server did not know; -Infinity: never turned off. */
  private offUntil = -Infinity;
  /** How long the last turn-off lasted (0: none yet). */
  private pauseMs = 0;

  constructor(
    private readonly limit = MAX_PREPARED_STATEMENTS,
    /** Monotonic milliseconds (performance.now): the pauses of `executable`. */
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * Whether a statement a connection prepared may be run by its name in a simple query (`EXECUTE`,
   * TenantDb, AdvanceBatch), which lets several statements share one round trip. Behind a
   * transaction-mode pooler that carries prepared statements every `EXECUTE` fails
   * (isUnknownStatement); after a `DISCARD ALL` on one connection, one does. Either turns it off for
   * the pool (unknownStatement), not per connection: node-postgres opens connections as it likes,
   * and behind a pooler each would fail its first EXECUTE (docs/operations.md, "Limits and
   * hostile input").
   */
  get executable(): boolean {
    return this.now() >= this.offUntil;
  }

  /**
   * A statement run by its name failed as unknown to the server: `executable` is off for
   * EXECUTE_PAUSE_MS, doubled up to MAX_EXECUTE_PAUSE_MS when unknown again within one pause of
   * coming back (a pooler: one retried statement an hour once settled).
   */
  unknownStatement(): void {
    const now = this.now();
    // The other statements of the same moment failing too: one turn-off, not several.
    if (now < this.offUntil) return;
    const soonAfter = this.offUntil !== -Infinity && now - this.offUntil < this.pauseMs;
    this.pauseMs = soonAfter ? Math.min(MAX_EXECUTE_PAUSE_MS, this.pauseMs * 2) : EXECUTE_PAUSE_MS;
    this.offUntil = now + this.pauseMs;
  }

  /** How many texts are named so far (at most `limit`). */
  get size(): number {
    return this.names.size;
  }

  /** `sql` with `params` as node-postgres runs it: named when it can be prepared and the bound has room. */
  statement(sql: string, params: readonly unknown[] | undefined): pg.QueryConfig {
    const values = params as unknown[] | undefined;
    if (params === undefined || sql.includes(';')) return { text: sql, values };
    let name = this.names.get(sql);
    if (name === undefined) {
      if (this.names.size >= this.limit) return { text: sql, values };
      name = `cf_${createHash('sha256').update(sql).digest('base64url').slice(0, 24)}`;
      this.names.set(sql, name);
    }
    return { name, text: sql, values };
  }
}

/** How long `executable` is off after the first unknown name (StatementNames.unknownStatement). */
export const EXECUTE_PAUSE_MS = 60_000;
/** The longest it is off, when names keep failing each time they are tried again (a pooler). */
export const MAX_EXECUTE_PAUSE_MS = 3_600_000;

/** SQLSTATE of "prepared statement ... does not exist" (invalid_sql_statement_name). */
const UNKNOWN_STATEMENT_SQLSTATE = '26000';

/** A statement run by a name the server's connection does not know (StatementNames.executable). */
export function isUnknownStatement(error: unknown): boolean {
  return (error as { code?: unknown } | undefined)?.code === UNKNOWN_STATEMENT_SQLSTATE;
}

/** SQLSTATE of "cached plan must not change result type" (feature_not_supported). */
const STALE_PLAN_SQLSTATE = '0A000';

/**
 * A prepared statement whose result changed under it (a schema change): it fails so on every
 * execution on its connection until the connection goes, so the connection is destroyed.
 */
export function isStalePlan(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return code === STALE_PLAN_SQLSTATE && typeof message === 'string' && message.includes('cached plan');
}

/**
 * A prepared statement that cannot serve on its connection (isStalePlan, isUnknownStatement): it
 * did nothing, its connection is destroyed, and it is tried once more unnamed or without EXECUTE.
 */
export function isUnusableStatement(error: unknown): boolean {
  return isStalePlan(error) || isUnknownStatement(error);
}
