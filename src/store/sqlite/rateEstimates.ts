import type { RateEstimateStore } from '../changefeedStore.js';
import { rateEstimateFromRow, type RateEstimateDbRow } from '../storedRows.js';
import type { RateEstimateRow } from '../storeRecords.js';
import type { Db } from './database.js';

/** The scheduler's learned state of one watched log (migration 3). */

/** Rate estimates per watched log, so learned rates survive a restart and `status` can show them. */
export class RateEstimates implements RateEstimateStore {
  private readonly listStmt;
  private readonly upsertStmt;

  constructor(db: Db) {
    this.listStmt = db.prepare<[], RateEstimateDbRow>('SELECT * FROM rate_estimates');
    this.upsertStmt = db.prepare(
      `INSERT INTO rate_estimates (log, object_id, events, sessions, hours, last_event_at, updated_at, poll_cost, planned_rate, next_poll_at)
       VALUES (@log, @objectId, @events, @sessions, @hours, @lastEventAt, @updatedAt, @pollCost, @plannedRate, @nextPollAt)
       ON CONFLICT (log, object_id) DO UPDATE SET events = excluded.events, sessions = excluded.sessions, hours = excluded.hours,
         last_event_at = excluded.last_event_at,
         updated_at = excluded.updated_at, poll_cost = excluded.poll_cost, planned_rate = excluded.planned_rate,
         next_poll_at = excluded.next_poll_at`,
    );
  }

  async list(): Promise<RateEstimateRow[]> {
    return this.listStmt.all().map(rateEstimateFromRow);
  }

  async save(row: RateEstimateRow): Promise<void> {
    this.upsertStmt.run(row);
  }
}
