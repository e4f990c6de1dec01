import type { DeadLetterStore } from '../changefeedStore.js';
import { fromRow, type RowOf } from '../storedRows.js';
import { REQUEUE_BATCH_EVENTS, REQUEUE_COUNT_KEY, type DeadLetter } from '../storeRecords.js';
import type { RequeueCounts, RequeueCountRow } from '../requeueCounts.js';
import type { TenantConnection } from './tenantConnection.js';

const LIST = `SELECT d.sink, d.seq, e.event_id, e.type, e.log, e.object_id, d.attempts, d.last_error, d.last_status,
    d.last_response, d.first_attempt_at, d.updated_at AS dead_at
  FROM deliveries d JOIN events e ON e.tenant = d.tenant AND e.seq = d.seq
  WHERE d.tenant = @tenant AND d.state = 'dead' AND (@sink IS NULL OR d.sink = @sink)
    AND (@eventId IS NULL OR e.event_id = @eventId)
  ORDER BY d.sink, d.seq LIMIT @limit`;
const REQUEUE_EVENT = `UPDATE deliveries SET state = 'pending', attempts = 0, next_attempt_at = 0, first_attempt_at = NULL,
    updated_at = @now
  WHERE tenant = @tenant AND state = 'dead' AND (@sink IS NULL OR sink = @sink)
    AND seq IN (SELECT seq FROM events WHERE tenant = @tenant AND event_id = @eventId)`;
// The next REQUEUE_BATCH_EVENTS dead letters after @after in seq order (deliveries_by_state).
const REQUEUE_SINK = `UPDATE deliveries SET state = 'pending', attempts = 0, next_attempt_at = 0, first_attempt_at = NULL,
    updated_at = @now
  WHERE tenant = @tenant AND sink = @sink AND seq IN (SELECT seq FROM deliveries
    WHERE tenant = @tenant AND sink = @sink AND state = 'dead' AND seq > @after ORDER BY seq LIMIT @limit)
  RETURNING seq`;
const COUNTS = 'SELECT tenant, value FROM meta WHERE key = ? AND tenant IN (SELECT value FROM json_each(?))';
const BUMP = `INSERT INTO meta (tenant, key, value) VALUES (?, ?, '1')
  ON CONFLICT (tenant, key) DO UPDATE SET value = CAST(value AS INTEGER) + 1`;

/** Deliveries that ran out of chances (`state = 'dead'`), listed and put back in line. */
export class DeadLetters implements DeadLetterStore {
  constructor(
    private readonly conn: TenantConnection,
    private readonly requeueCounts: RequeueCounts,
  ) {}

  async list(filter: { sink?: string; eventId?: string; limit?: number } = {}): Promise<DeadLetter[]> {
    return this.conn
      .statement<{ tenant: string; sink: string | null; eventId: string | null; limit: number }, RowOf<DeadLetter>>(
        LIST,
      )
      .all({
        tenant: this.conn.tenant,
        sink: filter.sink ?? null,
        eventId: filter.eventId ?? null,
        limit: filter.limit ?? 1000,
      })
      .map(fromRow<DeadLetter>);
  }

  /** The event loop is free between batches. Letters that die meanwhile behind the position reached wait for the next retry. */
  async requeueSink(sink: string, now: number): Promise<number> {
    const requeue = this.conn.statement<object, { seq: number }>(REQUEUE_SINK);
    let requeued = 0;
    for (let after = 0; ;) {
      const seqs = this.conn.transaction(() => {
        const batch = requeue
          .all({ tenant: this.conn.tenant, sink, now, after, limit: REQUEUE_BATCH_EVENTS })
          .map((row) => row.seq);
        countRequeue(this.conn, batch.length);
        return batch;
      });
      requeued += seqs.length;
      if (seqs.length < REQUEUE_BATCH_EVENTS) return requeued;
      after = Math.max(...seqs);
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  async requeueEvent(eventId: string, sink: string | undefined, now: number): Promise<number> {
    const requeue = this.conn.statement<object>(REQUEUE_EVENT);
    return this.conn.transaction(() =>
      countRequeue(this.conn, requeue.run({ tenant: this.conn.tenant, eventId, sink: sink ?? null, now }).changes),
    );
  }

  async requeueCount(): Promise<number> {
    return this.requeueCounts.of(this.conn.tenant, async (tenants) =>
      this.conn.statement<[string, string], RequeueCountRow>(COUNTS).all(REQUEUE_COUNT_KEY, JSON.stringify(tenants)),
    );
  }
}

/**
 * Counts a re-queue write in the tenant's re-queue count when it `changed` something (dead letters
 * put back, journal events queued again by a replay); returns `changed`. Called in the write's
 * transaction: a re-queue that is not counted is never seen by a daemon in another process.
 */
export function countRequeue(conn: TenantConnection, changed: number): number {
  if (changed > 0) conn.statement(BUMP).run(conn.tenant, REQUEUE_COUNT_KEY);
  return changed;
}
