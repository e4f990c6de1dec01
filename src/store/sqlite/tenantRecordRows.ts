import {
  noRecordChanges,
  type TenantRecord,
  type TenantRecordChanges,
  type TenantRecords,
} from '../../tenants/tenant.js';
import type { Db } from './database.js';

/**
 * The tenant records of a SQLite store (`tenant_records`, migration 8): the same decision as on
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
         SET key_fingerprint = excluded.key_fingerprint, file_text = excluded.file_text, recorded_at = excluded.recorded_at`,
    );
    this.db.transaction(() => {
      for (const tenant of changes.remove) remove.run(tenant);
      for (const record of changes.put) put.run(record.tenant, record.keyFingerprint, record.fileText, Date.now());
    })();
    return Promise.resolve(result);
  }

  private rows(): TenantRecord[] {
    const rows = this.db
      .prepare('SELECT tenant, key_fingerprint, file_text FROM tenant_records ORDER BY tenant')
      .all() as { tenant: string; key_fingerprint: string; file_text: string }[];
    return rows.map((row) => ({ tenant: row.tenant, keyFingerprint: row.key_fingerprint, fileText: row.file_text }));
  }
}
