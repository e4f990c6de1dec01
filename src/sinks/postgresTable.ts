import { createHash } from 'node:crypto';
import type { OutboundEvent } from '../sinkContract/sink.js';

/** The table the postgres sink writes, as SQL: columns and indexes are documented in docs/sinks.md. */

/** `name` or `schema.name`: letters, digits, `_` and `$`, starting with a letter or `_`. */
export const TABLE_NAME = /^[A-Za-z_][A-Za-z0-9_$]{0,62}(\.[A-Za-z_][A-Za-z0-9_$]{0,62})?$/;

/** PostgreSQL keeps the first 63 bytes of an identifier and drops the rest without a word. */
const IDENTIFIER_BYTES = 63;

/** A double-quoted identifier: used exactly as written, case included, whatever words PostgreSQL reserves. */
export function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * An index name for `table`: `<table><suffix>` when that fits in 63 bytes. A longer one would be
 * cut, and two long table names sharing their first characters would then name the same index,
 * the second `CREATE INDEX IF NOT EXISTS` silently creating nothing: the table is shortened and
 * a hash of its full name keeps the names of two tables apart.
 */
export function indexName(table: string, suffix: string): string {
  const plain = `${table}${suffix}`;
  if (Buffer.byteLength(plain) <= IDENTIFIER_BYTES) return plain;
  const hash = createHash('sha256').update(table).digest('hex').slice(0, 8);
  return `${table.slice(0, IDENTIFIER_BYTES - suffix.length - hash.length - 1)}_${hash}${suffix}`;
}

/** The columns the sink writes, in the order of insertParameters. */
const COLUMNS = 'id, tenant, sequence, type, source, subject, time, log, object_id, data, event';

/** The SQL the sink runs on table `name` (see the table described above). */
export function tableSql(name: string) {
  const parts = name.split('.');
  const bare = parts[parts.length - 1] as string;
  const table = parts.map(quoteIdentifier).join('.');
  // An index lives in its table's schema and takes an unqualified name.
  const index = (suffix: string) => quoteIdentifier(indexName(bare, suffix));
  return {
    table,
    /** The schema and table when missing. */
    create: [
      ...(parts.length === 2 ? [`CREATE SCHEMA IF NOT EXISTS ${quoteIdentifier(parts[0] as string)}`] : []),
      `CREATE TABLE IF NOT EXISTS ${table} (
        id text NOT NULL,
        tenant text NOT NULL,
        sequence bigint NOT NULL,
        type text NOT NULL,
        source text NOT NULL,
        subject text,
        time timestamptz,
        log text NOT NULL,
        object_id text NOT NULL,
        data jsonb NOT NULL,
        event jsonb NOT NULL,
        ingested_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant, id)
      )`,
    ],
    /** Fails unless the table exists with every column the sink writes (a table made by hand may lack some). */
    probe: `SELECT ${COLUMNS} FROM ${table} LIMIT 0`,
    /**
     * Whether the table has a key that makes a re-sent event a no-op: a primary key or plain unique
     * index on (`tenant`, `id`); and the unique indexes whose key leaves `tenant` out, which the
     * insert's ON CONFLICT DO NOTHING would also obey, dropping one tenant's event for another's.
     * `$1` the table; one row `{ keyed, without_tenant }`, the latter index names or null.
     */
    eventKey: `WITH unique_keys AS (
        SELECT i.indimmediate AND i.indpred IS NULL AND i.indexprs IS NULL AS plain,
               (SELECT relname FROM pg_class WHERE oid = i.indexrelid) AS name,
               (SELECT array_agg(a.attname::text ORDER BY a.attname)
                  FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
                  JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
                 WHERE k.n <= i.indnkeyatts) AS columns
          FROM pg_index i WHERE i.indrelid = to_regclass($1) AND i.indisunique)
      SELECT EXISTS (SELECT 1 FROM unique_keys WHERE plain AND columns = ARRAY['id', 'tenant']) AS keyed,
             (SELECT string_agg(name, ', ' ORDER BY name) FROM unique_keys
               WHERE NOT (columns IS NOT NULL AND 'tenant' = ANY (columns))) AS without_tenant`,
    /** The indexes when missing; run once the columns exist. */
    indexes: [
      `CREATE INDEX IF NOT EXISTS ${index('_by_object_time')} ON ${table} (log, object_id, time)`,
      `CREATE INDEX IF NOT EXISTS ${index('_by_type_time')} ON ${table} (type, time)`,
      `CREATE INDEX IF NOT EXISTS ${index('_by_tenant_sequence')} ON ${table} (tenant, sequence)`,
    ],
    // One statement for the whole batch: a column of values per parameter, so the statement is
    // the same for every batch size (no 65,535-parameter ceiling, one parse per connection).
    // unnest keeps the array order. ON CONFLICT without a target makes a re-sent event a no-op
    // whichever unique index on (tenant, id) it meets: the primary key, or a hand-made table's index.
    insert: `INSERT INTO ${table} (${COLUMNS})
      SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[],
        $7::timestamptz[], $8::text[], $9::text[], $10::jsonb[], $11::jsonb[])
      ON CONFLICT DO NOTHING`,
  };
}

/** A row as the parameters of `insert`, one array per column. */
export function insertParameters(batch: readonly OutboundEvent[]): unknown[][] {
  const columns: unknown[][] = Array.from({ length: 11 }, () => []);
  for (const event of batch) {
    const ce = JSON.parse(event.json) as { source?: string; subject?: string; time?: string; data?: unknown };
    const row = [
      event.id,
      event.tenant,
      event.seq,
      event.type,
      ce.source ?? '',
      ce.subject ?? null,
      ce.time ?? null,
      event.log,
      event.objectId,
      // `data` is re-serialised from the parsed event: the same JSON value, and jsonb keeps values, not bytes.
      JSON.stringify(ce.data ?? null),
      event.json,
    ];
    row.forEach((value, i) => (columns[i] as unknown[]).push(value));
  }
  return columns;
}
