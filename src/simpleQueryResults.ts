import type pg from 'pg';

/**
 * The results of a simple query (no parameters): node-postgres answers one of several statements
 * with one result each, in order, and one of a single statement with that result alone.
 */
export function simpleQueryResults<R extends pg.QueryResultRow>(
  answer: pg.QueryResult<R> | pg.QueryResult<R>[],
): pg.QueryResult<R>[] {
  return ([] as pg.QueryResult<R>[]).concat(answer);
}
