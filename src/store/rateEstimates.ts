import type { LogKind } from '../logs.js';
import type { Db } from './database.js';

/** The scheduler's learned state of one watched log (migration 3). */
export interface RateEstimateRow {
  log: LogKind;
  objectId: string;
  /** Decayed count of changes seen, and the decayed hours of observation behind it. */
  events: number;
  hours: number;
  /** Decayed count of edit sessions among the changes, and performedAt of the newest change. */
  sessions: number;
  lastEventAt: number | null;
  /** Clock ms of the last poll that updated the estimate; null before the first. */
  updatedAt: number | null;
  /** Average requests one poll of this log costs. */
  pollCost: number;
  /** The effective rate (changes per hour) the scheduler planned with after the last poll. */
  plannedRate: number | null;
  /** When the scheduler expected to poll the log next, as of the last poll. */
  nextPollAt: number | null;
}

interface Row {
  log: LogKind;
  object_id: string;
  events: number;
  hours: number;
  sessions: number;
  last_event_at: number | null;
  updated_at: number | null;
  poll_cost: number;
  planned_rate: number | null;
  next_poll_at: number | null;
}

/** Rate estimates per watched log, so learned rates survive a restart and `status` can show them. */
export class RateEstimates {
  private readonly listStmt;
  private readonly upsertStmt;

  constructor(db: Db) {
    this.listStmt = db.prepare<[], Row>('SELECT * FROM rate_estimates');
    this.upsertStmt = db.prepare(
      `INSERT INTO rate_estimates (log, object_id, events, sessions, hours, last_event_at, updated_at, poll_cost, planned_rate, next_poll_at)
       VALUES (@log, @objectId, @events, @sessions, @hours, @lastEventAt, @updatedAt, @pollCost, @plannedRate, @nextPollAt)
       ON CONFLICT (log, object_id) DO UPDATE SET events = excluded.events, sessions = excluded.sessions, hours = excluded.hours,
         last_event_at = excluded.last_event_at,
         updated_at = excluded.updated_at, poll_cost = excluded.poll_cost, planned_rate = excluded.planned_rate,
         next_poll_at = excluded.next_poll_at`,
    );
  }

  list(): RateEstimateRow[] {
    return this.listStmt.all().map((r) => ({
      log: r.log,
      objectId: r.object_id,
      events: r.events,
      hours: r.hours,
      sessions: r.sessions,
      lastEventAt: r.last_event_at,
      updatedAt: r.updated_at,
      pollCost: r.poll_cost,
      plannedRate: r.planned_rate,
      nextPollAt: r.next_poll_at,
    }));
  }

  save(row: RateEstimateRow): void {
    this.upsertStmt.run(row);
  }
}
