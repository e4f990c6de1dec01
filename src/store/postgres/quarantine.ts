import type { QuarantinedEntry } from '../../api/quarantinedEntry.js';
import type { LogKind } from '../../logs.js';
import type { QuarantineStore } from '../changefeedStore.js';
import { fromRow, QUARANTINE_COLUMNS, quarantineFingerprint, type RowOf } from '../storedRows.js';
import type { QuarantineRecord } from '../storeRecords.js';
import type { Query, TenantDb } from './tenantDb.js';
import { storableText } from './storableText.js';

export class PostgresQuarantine implements QuarantineStore {
  constructor(private readonly db: TenantDb) {}

  /** Part of the ingest transaction, one statement for the page: keeps each raw entry once. */
  add(query: Query, log: LogKind, objectId: string, entries: readonly QuarantinedEntry[], now: number): void {
    if (entries.length === 0) return;
    query.later(
      `INSERT INTO quarantine (tenant, log, object_id, fingerprint, entry_id, reason, raw, raw_bytes, request_id,
         first_seen_at)
       SELECT $1, $2, $3, u.fingerprint, u.entry_id, u.reason, u.raw, u.raw_bytes, u.request_id, $10
       FROM unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::int[], $9::text[])
         WITH ORDINALITY AS u (fingerprint, entry_id, reason, raw, raw_bytes, request_id, ord)
       ORDER BY u.ord
       ON CONFLICT DO NOTHING`,
      [
        this.db.tenant,
        log,
        objectId,
        entries.map(quarantineFingerprint),
        entries.map((e) => storableText(e.entryId ?? null)),
        entries.map((e) => storableText(e.reason)),
        entries.map((e) => storableText(e.raw)),
        entries.map((e) => e.rawBytes),
        entries.map((e) => storableText(e.requestId ?? null)),
        now,
      ],
    );
  }

  async count(): Promise<number> {
    const rows = await this.db.read<{ n: number }>('SELECT COUNT(*) AS n FROM quarantine WHERE tenant = $1', [
      this.db.tenant,
    ]);
    return rows[0]?.n ?? 0;
  }

  /** Newest first. */
  async list(filter: { log?: LogKind; limit?: number } = {}): Promise<QuarantineRecord[]> {
    const rows = await this.db.read<RowOf<QuarantineRecord>>(
      `SELECT ${QUARANTINE_COLUMNS} FROM quarantine
       WHERE tenant = $1 AND ($2::text IS NULL OR log = $2)
       ORDER BY first_seen_at DESC LIMIT $3`,
      [this.db.tenant, filter.log ?? null, filter.limit ?? 1000],
    );
    return rows.map(fromRow<QuarantineRecord>);
  }
}
