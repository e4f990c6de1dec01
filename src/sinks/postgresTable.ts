import { LOGS } from '../logs.js';
import type { OutboundEvent } from '../sinkContract/sink.js';

/**
 * The table the postgres sink writes, as SQL. One row per event, keyed by the CloudEvent id:
 *
 * - `id` text primary key (the CloudEvent id), `type`, `source`, `subject` (null for the
 *   identity-provider log), `time` timestamptz (null when the entry has no performedAt), `log`
 *   (career, skill or identity_provider), `object_id` ('' for the identity-provider log);
 * - `data` jsonb: the entry exactly as the service sent it; `event` jsonb: the whole CloudEvent;
 * - `ingested_at` timestamptz: when the row was inserted, on the database's clock.
 *
 * Indexes serve the obvious queries: one object's history in time order, and events of one type.
 */

/** `name` or `schema.name`: letters, digits, `_` and `$`, starting with a letter or `_`. */
export const TABLE_NAME = /^[A-Za-z_][A-Za-z0-9_$]{0,62}(\.[A-Za-z_][A-Za-z0-9_$]{0,62})?$/;

/** A double-quoted identifier: used exactly as written, case included, whatever words PostgreSQL reserves. */
export function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

export interface TableSql {
  /** The table, schema-qualified when configured so, quoted. */
  table: string;
  create: string[];
  insert: string;
}

export function tableSql(name: string): TableSql {
  const parts = name.split('.');
  const bare = parts[parts.length - 1] as string;
  const table = parts.map(quoteIdentifier).join('.');
  // An index lives in its table's schema and takes an unqualified name, at most 63 bytes.
  const index = (suffix: string) => quoteIdentifier(`${bare.slice(0, 63 - suffix.length)}${suffix}`);
  return {
    table,
    create: [
      ...(parts.length === 2 ? [`CREATE SCHEMA IF NOT EXISTS ${quoteIdentifier(parts[0] as string)}`] : []),
      `CREATE TABLE IF NOT EXISTS ${table} (
        id text PRIMARY KEY,
        type text NOT NULL,
        source text NOT NULL,
        subject text,
        time timestamptz,
        log text NOT NULL,
        object_id text NOT NULL,
        data jsonb NOT NULL,
        event jsonb NOT NULL,
        ingested_at timestamptz NOT NULL DEFAULT now()
      )`,
      `CREATE INDEX IF NOT EXISTS ${index('_by_object_time')} ON ${table} (log, object_id, time)`,
      `CREATE INDEX IF NOT EXISTS ${index('_by_type_time')} ON ${table} (type, time)`,
    ],
    // One statement for the whole batch: a column of values per parameter, so the statement is
    // the same for every batch size (no 65,535-parameter ceiling, one parse per connection).
    // unnest keeps the array order, and ON CONFLICT makes a re-sent event a no-op.
    insert: `INSERT INTO ${table} (id, type, source, subject, time, log, object_id, data, event)
      SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::text[],
        $7::text[], $8::jsonb[], $9::jsonb[])
      ON CONFLICT (id) DO NOTHING`,
  };
}

/** A row as the parameters of `insert`, one array per column. */
export function insertParameters(batch: readonly OutboundEvent[]): unknown[][] {
  const columns: unknown[][] = Array.from({ length: 9 }, () => []);
  for (const event of batch) {
    const ce = JSON.parse(event.json) as { source?: string; subject?: string; time?: string; data?: unknown };
    const row = [
      event.id,
      event.type,
      ce.source ?? '',
      ce.subject ?? null,
      ce.time ?? null,
      LOGS[event.log].slug,
      event.objectId,
      // `data` is re-serialised from the parsed event: the same JSON value, and jsonb keeps values, not bytes.
      JSON.stringify(ce.data ?? null),
      event.json,
    ];
    row.forEach((value, i) => (columns[i] as unknown[]).push(value));
  }
  return columns;
}
