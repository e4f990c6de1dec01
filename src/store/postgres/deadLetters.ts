import type { DeadLetterStore } from '../changefeedStore.js';
import { fromRow, type RowOf } from '../storedRows.js';
import { REQUEUE_BATCH_EVENTS, REQUEUE_COUNT_KEY, type DeadLetter } from '../storeRecords.js';
import type { RequeueCounts, RequeueCountRow } from '../requeueCounts.js';
import type { TenantDb } from './tenantDb.js';

/**
 * The requeue and its count as one statement: the count moves exactly when deliveries did, and
 * a running daemon watching it (another process) never sees one without the other.
 */
const requeueSql = (where: string): string => `
  WITH changed AS (
    UPDATE deliveries SET state = 'pending', attempts = 0, next_attempt_at = 0, first_attempt_at = NULL, updated_at = $2
    WHERE tenant = $1 AND state = 'dead' AND ${where}
    RETURNING seq
  ), counted AS (
    INSERT INTO meta (tenant, key, value) SELECT $1, '${REQUEUE_COUNT_KEY}', '1' WHERE EXISTS (SELECT 1 FROM changed)
    ON CONFLICT (tenant, key) DO UPDATE SET value = (meta.value::bigint + 1)::text
  )
  SELECT COUNT(*) AS n, MAX(seq) AS last FROM changed`;

/** Deliveries of one tenant that ran out of chances (`state = 'dead'`), listed and put back in line. */
export class PostgresDeadLetters implements DeadLetterStore {
  constructor(
    private readonly db: TenantDb,
    private readonly requeueCounts: RequeueCounts,
  ) {}

  async list(filter: { sink?: string; eventId?: string; limit?: number } = {}): Promise<DeadLetter[]> {
    const rows = await this.db.read<RowOf<DeadLetter>>(
      `SELECT d.sink, d.seq, e.event_id, e.type, e.log, e.object_id, d.attempts, d.last_error, d.last_status,
              d.last_response, d.first_attempt_at, d.updated_at AS dead_at
       FROM deliveries d JOIN events e ON e.tenant = d.tenant AND e.seq = d.seq
       WHERE d.tenant = $1 AND d.state = 'dead' AND ($2::text IS NULL OR d.sink = $2)
         AND ($3::text IS NULL OR e.event_id = $3)
       ORDER BY d.sink COLLATE "C", d.seq LIMIT $4`,
      [this.db.tenant, filter.sink ?? null, filter.eventId ?? null, filter.limit ?? 1000],
    );
    return rows.map(fromRow<DeadLetter>);
  }

  /** REQUEUE_BATCH_EVENTS per statement in seq order, each its own (fenced) transaction and counted. */
  async requeueSink(sink: string, now: number): Promise<number> {
    let requeued = 0;
    for (let after = 0; ;) {
      const result = await this.db.writeOne<{ n: number; last: string | null }>(
        requeueSql(`sink = $3 AND seq IN (SELECT seq FROM deliveries WHERE tenant = $1 AND sink = $3
          AND state = 'dead' AND seq > $4 ORDER BY seq LIMIT ${REQUEUE_BATCH_EVENTS})`),
        [this.db.tenant, now, sink, after],
      );
      const batch = Number(result.rows[0]?.n ?? 0);
      requeued += batch;
      if (batch < REQUEUE_BATCH_EVENTS) return requeued;
      after = Number(result.rows[0]?.last);
    }
  }

  async requeueEvent(eventId: string, sink: string | undefined, now: number): Promise<number> {
    const result = await this.db.writeOne<{ n: number }>(
      requeueSql(
        '($4::text IS NULL OR sink = $4) AND seq IN (SELECT seq FROM events WHERE tenant = $1 AND event_id = $3)',
      ),
      [this.db.tenant, now, eventId, sink ?? null],
    );
    return result.rows[0]?.n ?? 0;
  }

  async requeueCount(): Promise<number> {
    return this.requeueCounts.of(this.db.tenant, (tenants) =>
      this.db.read<RequeueCountRow>('SELECT tenant, value FROM meta WHERE key = $1 AND tenant = ANY($2)', [
        REQUEUE_COUNT_KEY,
        tenants,
      ]),
    );
  }
}
