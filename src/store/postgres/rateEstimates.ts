import type { RateEstimateStore } from '../changefeedStore.js';
import { rateEstimateFromRow, type RateEstimateDbRow } from '../storedRows.js';
import type { RateEstimateRow } from '../storeRecords.js';
import type { TenantDb } from './tenantDb.js';

/** Rate estimates per watched log of one tenant, so learned rates survive a restart and `status` can show them. */
export class PostgresRateEstimates implements RateEstimateStore {
  constructor(private readonly db: TenantDb) {}

  async list(): Promise<RateEstimateRow[]> {
    // In key order, as SQLite returns the rows of its table keyed by (log, object_id).
    const rows = await this.db.read<RateEstimateDbRow>(
      `SELECT log, object_id, events, hours, sessions, last_event_at, updated_at, poll_cost, planned_rate, next_poll_at
       FROM rate_estimates WHERE tenant = $1 ORDER BY log COLLATE "C", object_id COLLATE "C"`,
      [this.db.tenant],
    );
    return rows.map(rateEstimateFromRow);
  }

  async save(row: RateEstimateRow): Promise<void> {
    await this.db.writeOne(
      `INSERT INTO rate_estimates (tenant, log, object_id, events, sessions, hours, last_event_at, updated_at, poll_cost,
         planned_rate, next_poll_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
       ON CONFLICT (tenant, log, object_id) DO UPDATE SET events = excluded.events, sessions = excluded.sessions,
         hours = excluded.hours, last_event_at = excluded.last_event_at, updated_at = excluded.updated_at,
         poll_cost = excluded.poll_cost, planned_rate = excluded.planned_rate, next_poll_at = excluded.next_poll_at`,
      [
        this.db.tenant,
        row.log,
        row.objectId,
        row.events,
        row.sessions,
        row.hours,
        row.lastEventAt,
        row.updatedAt,
        row.pollCost,
        row.plannedRate,
        row.nextPollAt,
      ],
    );
  }
}
