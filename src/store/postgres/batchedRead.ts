import type pg from 'pg';
import type { TenantDb } from './tenantDb.js';

/** Most tenants (or tenants' sinks) one statement of a BatchedRead asks for; more wait for the next. */
const MAX_BATCH_KEYS = 1_000;

/**
 * One kind of read (a tenant's sinks, a sink's outbox counts, a tenant's watched logs) asked of
 * many tenants in the same turn of the event loop, answered by one statement for all of them. A
 * `/metrics` scrape asks every tenant at once: three statements per tenant and scrape (3,000
 * transactions at 1,000 tenants, every scrape) become three per scrape. Each answer comes from a
 * statement sent a turn after its question, so nobody is answered from rows read before they
 * asked. The statement runs on the first asker's connection to the pool (TenantDb.read): should
 * it fail, every asker of the batch gets its error.
 */
export class BatchedRead<R extends pg.QueryResultRow> {
  private open: { keys: Set<string>; rows: Promise<Map<string, R[]>> } | undefined;

  constructor(
    /** The statement and its parameters for these keys; each row it returns names its key. */
    private readonly statement: (keys: readonly string[]) => { sql: string; params: readonly unknown[] },
    private readonly keyOf: (row: R) => string,
  ) {}

  /** The rows of `key`, in the statement's order. */
  async rowsOf(db: TenantDb, key: string): Promise<R[]> {
    let batch = this.open;
    if (batch === undefined || batch.keys.size >= MAX_BATCH_KEYS) {
      const keys = new Set<string>();
      batch = { keys, rows: this.readNextTurn(db, keys) };
      this.open = batch;
    }
    batch.keys.add(key);
    return (await batch.rows).get(key) ?? [];
  }

  private async readNextTurn(db: TenantDb, keys: Set<string>): Promise<Map<string, R[]>> {
    // The questions of this turn join the batch; from the next one they open another.
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (this.open?.keys === keys) this.open = undefined;
    const { sql, params } = this.statement([...keys]);
    const byKey = new Map<string, R[]>();
    for (const row of await db.read<R>(sql, params)) {
      const key = this.keyOf(row);
      const rows = byKey.get(key);
      if (rows) rows.push(row);
      else byKey.set(key, [row]);
    }
    return byKey;
  }
}

/** The key of one tenant's sink in a BatchedRead: a NUL never appears in a PostgreSQL text. */
export const sinkKey = (tenant: string, sink: string): string => `${tenant}\u0000${sink}`;
