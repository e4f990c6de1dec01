import type pg from 'pg';
import { ChangefeedError } from '../errors.js';
import { storedEntryId } from './postgres/seenEntries.js';
import { storableText } from './postgres/storableText.js';
import type { PostgresStoreBackend } from './postgres/postgresStoreBackend.js';
import type { Db } from './sqlite/database.js';
import { TENANT_TABLES, tenantTableColumns } from './sqlite/tenantTables.js';
import { DEFAULT_TENANT } from '../tenants/tenant.js';

/** The columns PostgreSQL keeps as booleans (SQLite's 0 and 1). */
const BOOLEANS: Partial<Record<string, readonly string[]>> = { sinks: ['active'], sink_state: ['connected'] };

/** Rows per INSERT: well under PostgreSQL's 65,535 parameters for the widest table. */
const BATCH_ROWS = 500;

interface StoreMigrationReport {
  tenant: string;
  /** Rows copied, by table. */
  rows: Record<string, number>;
  /** The journal head carried over: feed cursors stay valid. */
  journalHead: number;
}

export class StoreMigrationError extends ChangefeedError {
  constructor(message: string) {
    super('STORE_MIGRATION_REFUSED', message);
  }
}

/**
 * Copies one tenant of a SQLite store (`from`, by default `default`) into tenant `tenant` of a
 * PostgreSQL store, in one PostgreSQL transaction:
 * cursors, seen ids, the journal with its positions (seq) unchanged, every delivery's state,
 * dead letters, sink state, learned rates, quarantine and meta. Nothing is re-delivered, since
 * delivered events stay delivered, and feed consumers keep their cursors. Refuses a tenant that
 * already has data in PostgreSQL. The caller keeps the SQLite store's daemon stopped meanwhile.
 */
export async function copySqliteToPostgres(
  source: Db,
  target: PostgresStoreBackend,
  tenant: string,
  from: string = DEFAULT_TENANT,
  /** Told the rows copied so far, after each batch: the progress of a copy that takes minutes. */
  onRows: (copied: number) => void = () => undefined,
): Promise<StoreMigrationReport> {
  const client = await target.pool.connect();
  const rows: Record<string, number> = {};
  try {
    await client.query('BEGIN');
    // One migration of a tenant at a time: a second one waits, then finds the tenant taken.
    await client.query("SELECT pg_advisory_xact_lock(hashtext('changefeed-store-migrate'), hashtext($1))", [tenant]);
    // Other tenants' ingests wait until the copy commits (seconds): the sequence of journal
    // positions is moved past the copied ones below, and must not race their inserts.
    await client.query('LOCK TABLE events IN SHARE ROW EXCLUSIVE MODE');
    if ((await tenantsWithData(client, [tenant])).length > 0)
      throw new StoreMigrationError(
        `tenant ${tenant} already has data in the PostgreSQL store; migrate into a tenant that has none ` +
          '(a second migration would mix two histories)',
      );
    let copied = 0;
    for (const table of TENANT_TABLES)
      rows[table] = await copyTable(source, client, { from, to: tenant }, table, (batch) => onRows((copied += batch)));
    const head =
      (source.prepare('SELECT head FROM journal_heads WHERE tenant = ?').get(from) as { head: number } | undefined)
        ?.head ?? 0;
    await client.query('INSERT INTO journal_heads (tenant, head) VALUES ($1, $2)', [tenant, head]);
    // New events come after the copied positions; the sequence never goes back (other tenants' heads rely on it).
    await client.query(
      `SELECT setval(pg_get_serial_sequence('events', 'seq'),
         GREATEST($1::bigint, COALESCE(pg_sequence_last_value(pg_get_serial_sequence('events', 'seq')::regclass), 0)))
       WHERE $1::bigint > 0`,
      [head],
    );
    await client.query('COMMIT');
    return { tenant, rows, journalHead: head };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

async function copyTable(
  source: Db,
  client: { query(sql: string, values?: unknown[]): Promise<unknown> },
  tenants: { from: string; to: string },
  table: string,
  onBatch: (rows: number) => void,
): Promise<number> {
  const booleans = new Set(BOOLEANS[table] ?? []);
  const tenant = tenants.to;
  // events.seq is an identity column: the copied positions are kept as they were.
  const overriding = table === 'events' ? ' OVERRIDING SYSTEM VALUE' : '';
  // Read in batches, never the whole table: a store's seen ids and journal may be millions of rows.
  let batch: Record<string, unknown>[] = [];
  let copied = 0;
  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    const columns = Object.keys(batch[0] ?? {});
    const values: unknown[] = [];
    const tuples = batch.map((row) => {
      const placeholders = [tenant, ...columns.map((c) => toPostgres(row[c], booleans.has(c), table, c))].map(
        (value) => {
          values.push(value);
          return `$${values.length}`;
        },
      );
      return `(${placeholders.join(', ')})`;
    });
    await client.query(
      `INSERT INTO ${table} (tenant, ${columns.join(', ')})${overriding} VALUES ${tuples.join(', ')}`,
      values,
    );
    copied += batch.length;
    onBatch(batch.length);
    batch = [];
  };
  const select = `SELECT ${tenantTableColumns(source, table).join(', ')} FROM ${table} WHERE tenant = ?`;
  for (const row of source.prepare(select).iterate(tenants.from) as IterableIterator<Record<string, unknown>>) {
    batch.push(row);
    if (batch.length === BATCH_ROWS) await flush();
  }
  await flush();
  return copied;
}

function toPostgres(value: unknown, boolean: boolean, table: string, column: string): unknown {
  if (boolean) return value === 1 || value === true;
  // Seen ids are keys: kept apart exactly, where other text only has to be storable.
  if (table === 'seen_entries' && column === 'entry_id' && typeof value === 'string') return storedEntryId(value);
  if (typeof value === 'string') return storableText(value);
  return value;
}

/** The rows `copySqliteToPostgres` copies of tenant `from`: the total its progress counts towards. */
export function countTenantRows(source: Db, from: string): number {
  let total = 0;
  for (const table of TENANT_TABLES)
    total += (source.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE tenant = ?`).get(from) as { n: number }).n;
  return total;
}

/** Those of `tenants` that have any rows in the PostgreSQL store (before a copy, and inside it). */
export async function tenantsWithData(db: pg.Pool | pg.PoolClient, tenants: readonly string[]): Promise<string[]> {
  const { rows } = await db.query<{ tenant: string }>(
    `SELECT tenant FROM watched_logs WHERE tenant = ANY($1) UNION SELECT tenant FROM events WHERE tenant = ANY($1)
     UNION SELECT tenant FROM meta WHERE tenant = ANY($1) UNION SELECT tenant FROM journal_heads WHERE tenant = ANY($1)
     ORDER BY 1`,
    [tenants],
  );
  return rows.map((r) => r.tenant);
}
