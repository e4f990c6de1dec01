import type { SinkStateStore } from '../changefeedStore.js';
import type { SinkStateRow, SinkStateUpdate } from '../storeRecords.js';
import { sinkStateFromRow, type SinkStateDbRow } from '../storedRows.js';
import { BatchedRead } from './batchedRead.js';
import type { TenantDb } from './tenantDb.js';
import { storableText } from './storableText.js';

type TenantSinkRow = SinkStateDbRow & { tenant: string };

/** Every asking tenant's sinks with their state, in one statement (BatchedRead). */
export function sinkListRead(): BatchedRead<TenantSinkRow> {
  return new BatchedRead<TenantSinkRow>(
    (tenants) => ({
      sql: `SELECT s.tenant, s.name, s.type, s.active, s.registered_at, t.connected, t.paused_until,
              t.consecutive_failures, t.last_error, t.last_error_at, t.last_delivery_at, t.circuit, t.disabled_reason,
              t.failing_since
            FROM sinks s LEFT JOIN sink_state t ON t.tenant = s.tenant AND t.sink = s.name
            WHERE s.tenant = ANY($1::text[]) ORDER BY s.tenant, s.name COLLATE "C"`,
      params: [tenants],
    }),
    (row) => row.tenant,
  );
}

/** Which sinks one tenant's store feeds, and their connection state. */
export class PostgresSinkStates implements SinkStateStore {
  constructor(
    private readonly db: TenantDb,
    private readonly listRead: BatchedRead<TenantSinkRow>,
  ) {}

  async activate(configured: readonly { name: string; type: string }[], now: number): Promise<string[]> {
    // One row per name, the last type given winning, as the SQLite loop of upserts leaves it.
    const types = new Map(configured.map((s) => [s.name, s.type]));
    const known = await this.db.transaction(async (query) => {
      const { rows } = await query<{ name: string }>('SELECT name FROM sinks WHERE tenant = $1', [this.db.tenant]);
      await query('UPDATE sinks SET active = false WHERE tenant = $1', [this.db.tenant]);
      await query(
        `INSERT INTO sinks (tenant, name, type, active, registered_at)
         SELECT $1, u.name, u.type, true, $4 FROM unnest($2::text[], $3::text[]) AS u (name, type)
         ON CONFLICT (tenant, name) DO UPDATE SET active = true, type = excluded.type`,
        [this.db.tenant, [...types.keys()], [...types.values()], now],
      );
      return new Set(rows.map((r) => r.name));
    });
    return configured.map((s) => s.name).filter((name) => !known.has(name));
  }

  async recordState(state: SinkStateUpdate, guard?: { disabledReason: string | null }): Promise<boolean> {
    const { rowCount } = await this.db.writeOne(
      `INSERT INTO sink_state (tenant, sink, connected, paused_until, consecutive_failures, last_error, last_error_at,
         last_delivery_at, circuit, disabled_reason, failing_since)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
       ON CONFLICT (tenant, sink) DO UPDATE SET connected = excluded.connected, paused_until = excluded.paused_until,
         consecutive_failures = excluded.consecutive_failures, last_error = excluded.last_error,
         last_error_at = excluded.last_error_at,
         last_delivery_at = COALESCE(excluded.last_delivery_at, sink_state.last_delivery_at),
         circuit = excluded.circuit, disabled_reason = excluded.disabled_reason,
         failing_since = excluded.failing_since
       WHERE NOT $12::boolean OR sink_state.disabled_reason IS NOT DISTINCT FROM $13::text`,
      [
        this.db.tenant,
        state.sink,
        state.connected,
        state.pausedUntil,
        state.consecutiveFailures,
        storableText(state.lastError),
        state.lastErrorAt,
        state.lastDeliveryAt,
        state.circuit ?? 'closed',
        storableText(state.disabledReason ?? null),
        state.failingSince ?? null,
        guard !== undefined,
        storableText(guard?.disabledReason ?? null),
      ],
    );
    return (rowCount ?? 0) > 0;
  }

  async enable(sink: string): Promise<boolean> {
    // The row as it was, read in the same statement that clears it.
    const { rows } = await this.db.writeOne<{ was_disabled: boolean }>(
      `UPDATE sink_state t SET disabled_reason = NULL, failing_since = NULL, consecutive_failures = 0,
         circuit = 'closed', paused_until = 0
       FROM sink_state old
       WHERE t.tenant = $1 AND t.sink = $2 AND old.tenant = t.tenant AND old.sink = t.sink
       RETURNING old.disabled_reason IS NOT NULL AS was_disabled`,
      [this.db.tenant, sink],
    );
    return rows[0]?.was_disabled ?? false;
  }

  /** Read with the lists other tenants ask for in the same turn (a scrape asks every tenant at once). */
  async list(): Promise<SinkStateRow[]> {
    const rows = await this.listRead.rowsOf(this.db, this.db.tenant);
    return rows.map(({ tenant: _tenant, ...row }) => sinkStateFromRow(row));
  }
}
