import type { LogKind } from '../../logs.js';
import type { ChangeCloudEvent } from '../../events/cloudEvent.js';
import type { OutboxStore } from '../changefeedStore.js';
import type { DeliveryCounts, FailedDelivery, PendingDelivery } from '../storeRecords.js';
import type { Db } from './database.js';
import { PRUNED_THROUGH_KEY } from './journal.js';

/**
 * The outbox: events in ingestion order and, per active sink, one delivery row each.
 * Every state change of a delivery is one short transaction, so a crash at any point leaves each
 * event either delivered or still pending (at-least-once).
 */
export class Outbox implements OutboxStore {
  private readonly insertEventStmt;
  private readonly insertDeliveriesStmt;
  private readonly pendingStmt;
  private readonly deliveredStmt;
  private readonly retryStmt;
  private readonly deadStmt;
  private readonly countsStmt;
  private readonly pruneStmt;
  private readonly prunedThroughStmt;
  private readonly filteredStmt;
  private readonly payloadsStmt;
  private readonly enqueueStmt;

  constructor(private readonly db: Db) {
    this.insertEventStmt = db.prepare(
      `INSERT INTO events (event_id, log, object_id, type, performed_at, ingested_at, payload)
       VALUES (@eventId, @log, @objectId, @type, @performedAt, @ingestedAt, @payload)
       ON CONFLICT (event_id) DO NOTHING`,
    );
    this.insertDeliveriesStmt = db.prepare(
      `INSERT INTO deliveries (sink, seq, updated_at) SELECT name, ?, ? FROM sinks WHERE active = 1`,
    );
    this.pendingStmt = db.prepare<
      [string, number, number],
      {
        seq: number;
        event_id: string;
        log: LogKind;
        object_id: string;
        type: string;
        attempts: number;
        next_attempt_at: number;
        first_attempt_at: number | null;
        ingested_at: number;
      }
    >(
      `SELECT d.seq, e.event_id, e.log, e.object_id, e.type, d.attempts, d.next_attempt_at,
              d.first_attempt_at, e.ingested_at
       FROM deliveries d JOIN events e ON e.seq = d.seq
       WHERE d.sink = ? AND d.state = 'pending' AND d.seq > ?
       ORDER BY d.seq LIMIT ?`,
    );
    this.deliveredStmt = db.prepare(
      `UPDATE deliveries SET state = 'delivered', attempts = attempts + 1, last_error = NULL, updated_at = @now,
         first_attempt_at = COALESCE(first_attempt_at, @now)
       WHERE sink = @sink AND seq = @seq AND state = 'pending'`,
    );
    this.retryStmt = db.prepare(
      `UPDATE deliveries SET attempts = attempts + 1, next_attempt_at = @nextAttemptAt, last_error = @error,
         last_status = @status, last_response = @response, updated_at = @now, first_attempt_at = COALESCE(first_attempt_at, @now)
       WHERE sink = @sink AND seq = @seq AND state = 'pending'`,
    );
    this.deadStmt = db.prepare(
      `UPDATE deliveries SET state = 'dead', attempts = attempts + 1, last_error = @error, last_status = @status,
         last_response = @response, updated_at = @now, first_attempt_at = COALESCE(first_attempt_at, @now)
       WHERE sink = @sink AND seq = @seq AND state = 'pending'`,
    );
    this.enqueueStmt = db.prepare(
      `INSERT INTO deliveries (sink, seq, state, updated_at)
       SELECT @sink, seq, 'pending', @now FROM events
       WHERE (@since IS NULL OR ingested_at >= @since) AND (@until IS NULL OR ingested_at < @until) AND (@log IS NULL OR log = @log)
       ORDER BY seq
       ON CONFLICT (sink, seq) DO UPDATE SET state = 'pending', attempts = 0, next_attempt_at = 0, first_attempt_at = NULL,
         last_error = NULL, last_status = NULL, last_response = NULL, updated_at = @now`,
    );
    this.payloadsStmt = db.prepare<[string], { seq: number; payload: string }>(
      'SELECT seq, payload FROM events WHERE seq IN (SELECT value FROM json_each(?))',
    );
    this.filteredStmt = db.prepare(
      `UPDATE deliveries SET state = 'filtered', updated_at = @now WHERE sink = @sink AND seq = ` +
        `@seq AND state = 'pending'`,
    );
    this.countsStmt = db.prepare<[string], { state: string; n: number; oldest: number | null }>(
      `SELECT d.state, COUNT(*) AS n, MIN(e.ingested_at) AS oldest
       FROM deliveries d JOIN events e ON e.seq = d.seq WHERE d.sink = ? GROUP BY d.state`,
    );
    this.pruneStmt = db.prepare(
      `DELETE FROM events WHERE ingested_at < ?
         AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.seq = events.seq AND d.state = 'pending')`,
    );
    // The feed answers 410 to a position below the highest pruned seq (see Journal).
    this.prunedThroughStmt = db.prepare(
      `INSERT INTO meta (key, value)
       SELECT '${PRUNED_THROUGH_KEY}', MAX(seq) FROM events WHERE ingested_at < ?
         AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.seq = events.seq AND d.state = 'pending')
       HAVING MAX(seq) IS NOT NULL
       ON CONFLICT (key) DO UPDATE SET value = MAX(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))`,
    );
  }

  /**
   * Appends one event and a pending delivery for every active sink. Call inside the ingest
   * transaction. Returns false when the event id already exists (a replayed entry).
   */
  append(
    event: ChangeCloudEvent,
    args: { log: LogKind; objectId: string; performedAt: number | null; now: number },
  ): boolean {
    const info = this.insertEventStmt.run({
      eventId: event.id,
      log: args.log,
      objectId: args.objectId,
      type: event.type,
      performedAt: args.performedAt,
      ingestedAt: args.now,
      payload: JSON.stringify(event),
    });
    if (info.changes === 0) return false;
    this.insertDeliveriesStmt.run(info.lastInsertRowid, args.now);
    return true;
  }

  /** The CloudEvent JSON of the given events. Kept out of `pending`, which scans far more rows than it sends. */
  async payloads(seqs: readonly number[]): Promise<Map<number, string>> {
    const rows = this.payloadsStmt.all(JSON.stringify(seqs));
    return new Map(rows.map((r) => [r.seq, r.payload]));
  }

  /** Up to `limit` pending deliveries of `sink` with seq > afterSeq, due or not, in seq order (without payloads). */
  async pending(sink: string, afterSeq: number, limit: number): Promise<PendingDelivery[]> {
    return this.pendingStmt.all(sink, afterSeq, limit).map((r) => ({
      seq: r.seq,
      eventId: r.event_id,
      log: r.log,
      objectId: r.object_id,
      type: r.type,
      attempts: r.attempts,
      nextAttemptAt: r.next_attempt_at,
      firstAttemptAt: r.first_attempt_at,
      ingestedAt: r.ingested_at,
    }));
  }

  async markDelivered(sink: string, seqs: readonly number[], now: number): Promise<void> {
    this.db.transaction(() => {
      for (const seq of seqs) this.deliveredStmt.run({ sink, seq, now });
    })();
  }

  async scheduleRetry(
    sink: string,
    retries: readonly (FailedDelivery & { nextAttemptAt: number })[],
    now: number,
  ): Promise<void> {
    this.db.transaction(() => {
      for (const r of retries) {
        this.retryStmt.run({
          sink,
          seq: r.seq,
          nextAttemptAt: r.nextAttemptAt,
          error: r.error,
          status: r.status ?? null,
          response: r.response ?? null,
          now,
        });
      }
    })();
  }

  async markDead(sink: string, dead: readonly FailedDelivery[], now: number): Promise<void> {
    this.db.transaction(() => {
      for (const d of dead)
        this.deadStmt.run({
          sink,
          seq: d.seq,
          error: d.error,
          status: d.status ?? null,
          response: d.response ?? null,
          now,
        });
    })();
  }

  /** Events the sink's filter excludes: settled without being sent. */
  async markFiltered(sink: string, seqs: readonly number[], now: number): Promise<void> {
    this.db.transaction(() => {
      for (const seq of seqs) this.filteredStmt.run({ sink, seq, now });
    })();
  }

  /**
   * Queues journal events for `sink` again (replay), with a fresh attempt budget, whatever their
   * delivery state: events ingested in [since, until), optionally of one log. Adds deliveries for
   * events the sink never had (a sink added later). Returns how many were queued.
   */
  async enqueueFromJournal(
    sink: string,
    range: { since?: number; until?: number; log?: LogKind },
    now: number,
  ): Promise<number> {
    return this.enqueueStmt.run({
      sink,
      since: range.since ?? null,
      until: range.until ?? null,
      log: range.log ?? null,
      now,
    }).changes;
  }

  async counts(sink: string): Promise<DeliveryCounts> {
    const counts: DeliveryCounts = { pending: 0, delivered: 0, dead: 0, filtered: 0, oldestPendingIngestedAt: null };
    for (const row of this.countsStmt.all(sink)) {
      if (row.state === 'pending') {
        counts.pending = row.n;
        counts.oldestPendingIngestedAt = row.oldest;
      } else if (row.state === 'delivered') counts.delivered = row.n;
      else if (row.state === 'dead') counts.dead = row.n;
      else if (row.state === 'filtered') counts.filtered = row.n;
    }
    return counts;
  }

  /** Drops journal entries older than `before` that no sink still waits for. */
  async prune(before: number): Promise<number> {
    return this.db.transaction(() => {
      this.prunedThroughStmt.run(before);
      return this.pruneStmt.run(before).changes;
    })();
  }
}
