import {
  noRecordChanges,
  type TenantRecord,
  type TenantRecordChanges,
  type TenantRecords,
} from '../../tenants/tenant.js';
import type { Db } from './database.js';

/**
 * The tenant records of a SQLite store (`tenant_records`): the same decision as on
 * PostgreSQL, kept across restarts, so a restarted daemon neither gives a key to another tenant
 * nor forgets the last valid file of one now invalid. One process writes the file (the state
 * directory's lock), so a plain transaction is all the settling needs.
 */
export class SqliteTenantRecords implements TenantRecords {
  constructor(private readonly db: Db) {}

  read(): Promise<readonly TenantRecord[]> {
    return Promise.resolve(this.rows());
  }

  settle<T>(decide: (records: readonly TenantRecord[]) => { result: T; changes: TenantRecordChanges }): Promise<T> {
    const { result, changes } = decide(this.rows());
    if (noRecordChanges(changes)) return Promise.resolve(result);
    const remove = this.db.prepare('DELETE FROM tenant_records WHERE tenant = ?');
    const put = this.db.prepare(
      `INSERT INTO tenant_records (tenant, key_fingerprint, file_text, recorded_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (tenant) DO UPDATE
         SET key_fingerprint = excluded.key_fingerprint, file_text = excluded.file_text,
             recorded_at = excluded.recorded_at, missing_since = NULL`,
    );
    const markMissing = this.db.prepare(
      'UPDATE tenant_records SET missing_since = ? WHERE tenant = ? AND missing_since IS NULL',
    );
    const now = Date.now();
    this.db.transaction(() => {
      for (const tenant of changes.remove) remove.run(tenant);
      for (const record of changes.put) put.run(record.tenant, record.keyFingerprint, record.fileText, now);
      for (const tenant of changes.markMissing) markMissing.run(now, tenant);
    })();
    return Promise.resolve(result);
  }

  // A date, not an interval of this process: the mark outlives restarts, so it is wall-clock time.
  private rows(): TenantRecord[] {
    const now = Date.now();
    const rows = this.db
      .prepare('SELECT tenant, key_fingerprint, file_text, missing_since FROM tenant_records ORDER BY tenant')
      .all() as { tenant: string; key_fingerprint: string; file_text: string; missing_since: number | null }[];
    return rows.map((row) => ({
      tenant: row.tenant,
      keyFingerprint: row.key_fingerprint,
      fileText: row.file_text,
      ...(row.missing_since === null ? {} : { missingForMs: Math.max(0, now - row.missing_since) }),
    }));
  }
}
