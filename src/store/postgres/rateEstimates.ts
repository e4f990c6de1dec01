import type { RateEstimateStore } from '../changefeedStore.js';
import { fromRow, RATE_ESTIMATE_COLUMNS, type RowOf } from '../storedRows.js';
import type { RateEstimateRow } from '../storeRecords.js';
import type { Query, TenantDb } from './tenantDb.js';

/** Rate estimates per watched log of one tenant, so learned rates survive a restart and `status` can show them. */
export class PostgresRateEstimates implements RateEstimateStore {
  constructor(private readonly db: TenantDb) {}

  async list(): Promise<RateEstimateRow[]> {
    // In key order, as SQLite returns the rows of its table keyed by (log, object_id).
    const rows = await this.db.read<RowOf<RateEstimateRow>>(
      `SELECT ${RATE_ESTIMATE_COLUMNS} FROM rate_estimates WHERE tenant = $1 ORDER BY log COLLATE "C", object_id COLLATE "C"`,
      [this.db.tenant],
    );
    return rows.map(fromRow<RateEstimateRow>);
  }

  /** `rows` (one per log at most) written in the caller's transaction, in one statement. */
  saveIn(query: Query, rows: readonly RateEstimateRow[]): void {
    query.later(
      `INSERT INTO rate_estimates (tenant, log, object_id, events, sessions, hours, last_event_at, updated_at, poll_cost,
         planned_rate, next_poll_at)
       SELECT $1, u.* FROM unnest($2::text[], $3::text[], $4::float8[], $5::float8[], $6::float8[], $7::float8[],
         $8::float8[], $9::float8[], $10::float8[], $11::float8[])
         AS u (log, object_id, events, sessions, hours, last_event_at, updated_at, poll_cost, planned_rate, next_poll_at)
       ON CONFLICT (tenant, log, object_id) DO UPDATE SET events = excluded.events, sessions = excluded.sessions,
         hours = excluded.hours, last_event_at = excluded.last_event_at, updated_at = excluded.updated_at,
         poll_cost = excluded.poll_cost, planned_rate = excluded.planned_rate, next_poll_at = excluded.next_poll_at`,
      [this.db.tenant, ...rateColumns(rows)],
    );
  }
}

/** `rows` as the ten column arrays (log first, next_poll_at last) the upserts of rates unnest. */
export function rateColumns(rows: readonly RateEstimateRow[]): unknown[] {
  const column = <K extends keyof RateEstimateRow>(key: K): RateEstimateRow[K][] => rows.map((row) => row[key]);
  return [
    column('log'),
    column('objectId'),
    column('events'),
    column('sessions'),
    column('hours'),
    column('lastEventAt'),
    column('updatedAt'),
    column('pollCost'),
    column('plannedRate'),
    column('nextPollAt'),
  ];
}
