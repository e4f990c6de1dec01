import type pg from 'pg';
import { noRecordChanges, type TenantRecord, type TenantRecordChanges, type TenantRecords } from '../tenants/tenant.js';

/** Serialises the settlements of the replicas sharing a schema (search_path names the schema). */
const SETTLE_LOCK = "pg_advisory_xact_lock(hashtext(current_schema() || '.changefeed_tenant_records'))";

/**
 * What the table asks of the store's pool (pg.Pool, or the store's gate in front of it: its
 * statements wait with the tenants' for a connection, so none waits inside node-postgres's pool).
 */
export interface RecordPool {
  connect(): Promise<pg.PoolClient>;
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    sql: string,
    params?: readonly unknown[],
  ): Promise<pg.QueryResult<R>>;
}

/**
 * The tenant records of a PostgreSQL store (`changefeed_tenant_records`, leaseSchema.ts), shared
 * by every replica. A settlement first decides from a plain read; only when its decision writes
 * something does it decide again inside a transaction holding an advisory lock, from the rows as
 * they are then, and write: so replicas that read the directory at once never both claim a key,
 * and the steady state (nothing to write) costs one SELECT per read of the directory.
 */
export class TenantRecordTable implements TenantRecords {
  constructor(private readonly pool: RecordPool) {}

  async read(): Promise<readonly TenantRecord[]> {
    return readRecords(this.pool);
  }

  async settle<T>(
    decide: (records: readonly TenantRecord[]) => { result: T; changes: TenantRecordChanges },
  ): Promise<T> {
    const first = decide(await readRecords(this.pool));
    if (noRecordChanges(first.changes)) return first.result;
    const client = await this.pool.connect();
    // A checked-out client has no listener of the pool's: a connection cut meanwhile (a restart,
    // pg_terminate_backend) would emit an uncaught 'error'. The statement under way fails instead.
    const ignore = (): void => undefined;
    client.on('error', ignore);
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      await client.query(`SELECT ${SETTLE_LOCK}`);
      const { result, changes } = decide(await readRecords(client));
      if (changes.remove.length > 0)
        await client.query('DELETE FROM changefeed_tenant_records WHERE tenant = ANY($1::text[])', [changes.remove]);
      // One statement for every record, not a round trip per tenant (thousands at a first start).
      if (changes.put.length > 0)
        await client.query(
          `INSERT INTO changefeed_tenant_records (tenant, key_fingerprint, file_text)
           SELECT * FROM unnest($1::text[], $2::text[], $3::text[])
           ON CONFLICT (tenant) DO UPDATE
             SET key_fingerprint = EXCLUDED.key_fingerprint, file_text = EXCLUDED.file_text,
                 recorded_at = clock_timestamp(), missing_since = NULL`,
          [
            changes.put.map((r) => r.tenant),
            changes.put.map((r) => r.keyFingerprint),
            changes.put.map((r) => r.fileText),
          ],
        );
      if (changes.markMissing.length > 0)
        await client.query(
          `UPDATE changefeed_tenant_records SET missing_since = clock_timestamp()
            WHERE tenant = ANY($1::text[]) AND missing_since IS NULL`,
          [changes.markMissing],
        );
      await client.query('COMMIT');
      return result;
    } catch (error) {
      // Destroyed, not given back (as the lease table's): a read-only session (25006, a database or
      // role set default_transaction_read_only) stays so for its life, and taken again from the
      // pool it refused every later settlement once the database took writes; a statement that
      // timed out may still be running there.
      broken = error instanceof Error ? error : new Error(String(error));
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.off('error', ignore);
      client.release(broken);
    }
  }
}

/** The records, with how long each file has been missing measured on the database's clock. */
async function readRecords(db: Pick<RecordPool, 'query'>): Promise<TenantRecord[]> {
  const { rows } = await db.query<{
    tenant: string;
    key_fingerprint: string;
    file_text: string;
    missing_for_ms: number | null;
  }>(
    `SELECT tenant, key_fingerprint, file_text,
            (extract(epoch FROM (clock_timestamp() - missing_since)) * 1000)::float8 AS missing_for_ms
       FROM changefeed_tenant_records ORDER BY tenant`,
  );
  return rows.map((row) => ({
    tenant: row.tenant,
    keyFingerprint: row.key_fingerprint,
    fileText: row.file_text,
    ...(row.missing_for_ms === null ? {} : { missingForMs: Math.max(0, row.missing_for_ms) }),
  }));
}
