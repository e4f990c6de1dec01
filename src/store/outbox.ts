import type { LogKind } from '../logs.js';
import type { ChangeCloudEvent } from '../events/cloudEvent.js';
import type { Db } from './database.js';
import { PRUNED_THROUGH_KEY } from './journal.js';

/** A delivery that is due or waiting, joined with its event, in ingestion (`seq`) order. */
export interface PendingDelivery {
  seq: number;
  eventId: string;
  log: LogKind;
  objectId: string;
  type: string;
  attempts: number;
  nextAttemptAt: number;
  firstAttemptAt: number | null;
  ingestedAt: number;
}

/** A failed attempt as the engine records it: the error, and what the destination answered. */
export interface FailedDelivery {
  seq: number;
  error: string;
  status?: number | undefined;
  /** Truncated response body. */
  response?: string | undefined;
}

export interface DeadLetter {
  sink: string;
  seq: number;
  eventId: string;
  type: string;
  log: LogKind;
  objectId: string;
  attempts: number;
  lastError: string | null;
  lastStatus: number | null;
  lastResponse: string | null;
  firstAttemptAt: number | null;
  deadAt: number | null;
}

interface DeadLetterRow {
  sink: string;
  seq: number;
  event_id: string;
  type: string;
  log: LogKind;
  object_id: string;
  attempts: number;
  last_error: string | null;
  last_status: number | null;
  last_response: string | null;
  first_attempt_at: number | null;
  updated_at: number | null;
}

export interface DeliveryCounts {
  pending: number;
  delivered: number;
  dead: number;
  filtered: number;
  oldestPendingIngestedAt: number | null;
}

/**
 * The outbox: events in ingestion order and, per active sink, one delivery row each.
 * Every state change of a delivery is one short transaction, so a crash at any point leaves each
 * event either delivered or still pending (at-least-once).
 */
const REQUEUE_COUNT_KEY = 'deadLetters.requeues';

export class Outbox {
  private readonly insertEventStmt;
  private readonly insertDeliveriesStmt;
  private readonly pendingStmt;
  private readonly deliveredStmt;
  private readonly retryStmt;
  private readonly deadStmt;
  private readonly countsStmt;
  private readonly pruneStmt;
  private readonly prunedThroughStmt;
  private readonly requeueDeadStmt;
  private readonly filteredStmt;
  private readonly payloadsStmt;
  private readonly enqueueStmt;
  private readonly deadListStmt;
  private readonly requeueOneStmt;

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
    this.deadListStmt = db.prepare<[{ sink: string | null; eventId: string | null; limit: number }], DeadLetterRow>(
      `SELECT d.sink, d.seq, e.event_id, e.type, e.log, e.object_id, d.attempts, d.last_error, d.last_status,
              d.last_response, d.first_attempt_at, d.updated_at
       FROM deliveries d JOIN events e ON e.seq = d.seq
       WHERE d.state = 'dead' AND (@sink IS NULL OR d.sink = @sink) AND (@eventId IS NULL OR e.event_id = @eventId)
       ORDER BY d.sink, d.seq LIMIT @limit`,
    );
    this.requeueOneStmt = db.prepare(
      `UPDATE deliveries SET state = 'pending', attempts = 0, next_attempt_at = 0, first_attempt_at = NULL, updated_at = @now
       WHERE state = 'dead' AND (@sink IS NULL OR sink = @sink) AND seq IN (SELECT seq FROM events WHERE event_id = @eventId)`,
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
    this.requeueDeadStmt = db.prepare(
      `UPDATE deliveries SET state = 'pending', attempts = 0, next_attempt_at = 0, first_attempt_at = NULL, updated_at = ?
       WHERE sink = ? AND state = 'dead'`,
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
  payloads(seqs: readonly number[]): Map<number, string> {
    const rows = this.payloadsStmt.all(JSON.stringify(seqs));
    return new Map(rows.map((r) => [r.seq, r.payload]));
  }

  /** Up to `limit` pending deliveries of `sink` with seq > afterSeq, due or not, in seq order (without payloads). */
  pending(sink: string, afterSeq: number, limit: number): PendingDelivery[] {
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

  markDelivered(sink: string, seqs: readonly number[], now: number): void {
    this.db.transaction(() => {
      for (const seq of seqs) this.deliveredStmt.run({ sink, seq, now });
    })();
  }

  scheduleRetry(sink: string, retries: readonly (FailedDelivery & { nextAttemptAt: number })[], now: number): void {
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

  markDead(sink: string, dead: readonly FailedDelivery[], now: number): void {
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
  markFiltered(sink: string, seqs: readonly number[], now: number): void {
    this.db.transaction(() => {
      for (const seq of seqs) this.filteredStmt.run({ sink, seq, now });
    })();
  }

  /** Dead letters, optionally of one sink or one event id. */
  deadLetters(filter: { sink?: string; eventId?: string; limit?: number } = {}): DeadLetter[] {
    return this.deadListStmt
      .all({ sink: filter.sink ?? null, eventId: filter.eventId ?? null, limit: filter.limit ?? 1000 })
      .map((r) => ({
        sink: r.sink,
        seq: r.seq,
        eventId: r.event_id,
        type: r.type,
        log: r.log,
        objectId: r.object_id,
        attempts: r.attempts,
        lastError: r.last_error,
        lastStatus: r.last_status,
        lastResponse: r.last_response,
        firstAttemptAt: r.first_attempt_at,
        deadAt: r.updated_at,
      }));
  }

  /**
   * Queues journal events for `sink` again (replay), with a fresh attempt budget, whatever their
   * delivery state: events ingested in [since, until), optionally of one log. Adds deliveries for
   * events the sink never had (a sink added later). Returns how many were queued.
   */
  enqueueFromJournal(sink: string, range: { since?: number; until?: number; log?: LogKind }, now: number): number {
    return this.enqueueStmt.run({
      sink,
      since: range.since ?? null,
      until: range.until ?? null,
      log: range.log ?? null,
      now,
    }).changes;
  }

  /** Puts every dead letter of `sink` back in line, with a fresh attempt budget. */
  requeueDead(sink: string, now: number): number {
    return this.bumpRequeues(this.requeueDeadStmt.run(now, sink).changes);
  }

  /** Puts the dead letter of one event (on one sink, or on every sink) back in line. */
  requeueDeadEvent(eventId: string, sink: string | undefined, now: number): number {
    return this.bumpRequeues(this.requeueOneStmt.run({ eventId, sink: sink ?? null, now }).changes);
  }

  /**
   * How many times dead letters were put back in line, ever. A running daemon (another process)
   * watches it to take re-queued deliveries up at once: they have old seqs, which its in-memory
   * window of pending deliveries has already passed.
   */
  requeueCount(): number {
    const row = this.db
      .prepare<[string], { value: string }>('SELECT value FROM meta WHERE key = ?')
      .get(REQUEUE_COUNT_KEY);
    return row ? Number(row.value) : 0;
  }

  private bumpRequeues(changed: number): number {
    if (changed > 0) {
      this.db
        .prepare(
          `INSERT INTO meta (key, value) VALUES (?, '1') ON CONFLICT (key) DO UPDATE SET value = ` +
            `CAST(value AS INTEGER) + 1`,
        )
        .run(REQUEUE_COUNT_KEY);
    }
    return changed;
  }

  counts(sink: string): DeliveryCounts {
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
  prune(before: number): number {
    return this.db.transaction(() => {
      this.prunedThroughStmt.run(before);
      return this.pruneStmt.run(before).changes;
    })();
  }
}
