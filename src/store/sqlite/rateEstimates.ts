import type { RateEstimateStore } from '../changefeedStore.js';
import { fromRow, RATE_ESTIMATE_COLUMNS, type RowOf } from '../storedRows.js';
import type { RateEstimateRow } from '../storeRecords.js';
import type { TenantConnection } from './tenantConnection.js';

const LIST = `SELECT ${RATE_ESTIMATE_COLUMNS} FROM rate_estimates WHERE tenant = ?`;
const UPSERT = `INSERT INTO rate_estimates (tenant, log, object_id, events, sessions, hours, last_event_at, updated_at, poll_cost, planned_rate, next_poll_at)
  VALUES (@tenant, @log, @objectId, @events, @sessions, @hours, @lastEventAt, @updatedAt, @pollCost, @plannedRate, @nextPollAt)
  ON CONFLICT (tenant, log, object_id) DO UPDATE SET events = excluded.events, sessions = excluded.sessions,
    hours = excluded.hours, last_event_at = excluded.last_event_at, updated_at = excluded.updated_at,
    poll_cost = excluded.poll_cost, planned_rate = excluded.planned_rate, next_poll_at = excluded.next_poll_at`;

/** Rate estimates per watched log, so learned rates survive a restart and `status` can show them. */
export class RateEstimates implements RateEstimateStore {
  constructor(private readonly conn: TenantConnection) {}

  async list(): Promise<RateEstimateRow[]> {
    return this.conn
      .statement<[string], RowOf<RateEstimateRow>>(LIST)
      .all(this.conn.tenant)
      .map(fromRow<RateEstimateRow>);
  }

  /** Part of a transaction that writes deferred state (SqliteChangefeedStore.deferState). */
  save(row: RateEstimateRow): void {
    this.conn.statement<object>(UPSERT).run({ ...row, tenant: this.conn.tenant });
  }
}
