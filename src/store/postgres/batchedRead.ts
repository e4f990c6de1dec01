import type pg from 'pg';
import type { TenantDb } from './tenantDb.js';

/** Most tenants (or tenants' sinks) one statement of a BatchedRead asks for; more wait for the next. */
const MAX_BATCH_KEYS = 1_000;

/**
 * One kind of read (a tenant's sinks, a sink's outbox counts, a tenant's watched logs, a log's seen
 * ids) asked of many tenants in the same turn of the event loop, or while the previous statement of
 * its kind is under way, answered by one statement for all of them: a `/metrics` scrape asks every
 * tenant at once. One statement in flight, so no timer. Each answer comes from a statement sent
 * after its question, so nobody is answered from rows read before they asked. Should it fail,
 * every asker records the error in its own health, as for a read of its own.
 */
export class BatchedRead<R extends pg.QueryResultRow> {
  private open: OpenBatch<R> | undefined;
  /** The answer of the last batch opened: the next one is sent once it came (it never rejects). */
  private last: Promise<unknown> = Promise.resolve();

  constructor(
    /** The statement and its parameters for these keys; each row it returns names its key. */
    private readonly statement: (keys: readonly string[]) => { sql: string; params: readonly unknown[] },
    private readonly keyOf: (row: R) => string,
  ) {}

  /** The rows of `key`, in the statement's order. */
  async rowsOf(db: TenantDb, key: string): Promise<R[]> {
    let batch = this.open;
    if (batch === undefined || batch.keys.size >= MAX_BATCH_KEYS) {
      const opened: OpenBatch<R> = {
        keys: new Set<string>(),
        db,
        rows: Promise.resolve({ ok: true, byKey: new Map() }),
      };
      opened.rows = this.readAfter(this.last, opened);
      batch = opened;
      this.open = batch;
      this.last = batch.rows;
    }
    // Sent for a starting tenant if one asks: in the gate's `start` lane, not behind every running
    // tenant's statements as the first asker's lane would put a starting tenant's question.
    if (db.starting && !batch.db.starting) batch.db = db;
    batch.keys.add(key);
    const answer = await batch.rows;
    if (!answer.ok) throw db.failure(answer.error);
    return answer.byKey.get(key) ?? [];
  }

  private async readAfter(previous: Promise<unknown>, batch: OpenBatch<R>): Promise<BatchAnswer<R>> {
    // The questions asked until the previous batch answered, and in the turn after, join this one.
    await previous;
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (this.open === batch) this.open = undefined;
    const { sql, params } = this.statement([...batch.keys]);
    let rows: R[];
    try {
      rows = await batch.db.readUnrecorded<R>(sql, params);
    } catch (error) {
      return { ok: false, error };
    }
    const byKey = new Map<string, R[]>();
    for (const row of rows) {
      const key = this.keyOf(row);
      const rows = byKey.get(key);
      if (rows) rows.push(row);
      else byKey.set(key, [row]);
    }
    return { ok: true, byKey };
  }
}

/** A batch still taking questions: its keys, the tenant it is sent for (its lane), its answer. */
interface OpenBatch<R> {
  readonly keys: Set<string>;
  db: TenantDb;
  rows: Promise<BatchAnswer<R>>;
}

/** A batch's statement's rows by key, or how it failed (each asker records and throws it). */
type BatchAnswer<R> = { ok: true; byKey: Map<string, R[]> } | { ok: false; error: unknown };

/** The key of one tenant's sink in a BatchedRead: a NUL never appears in a PostgreSQL text. */
export const sinkKey = (tenant: string, sink: string): string => `${tenant}\u0000${sink}`;
