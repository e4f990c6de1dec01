import type { LogKind } from '../../logs.js';
import type { ChangeCloudEvent } from '../../events/cloudEvent.js';
import type { OutboxStore } from '../changefeedStore.js';
import {
  COUNT_WINDOW_EVENTS,
  PRUNED_THROUGH_KEY,
  PRUNE_BATCH_EVENTS,
  REQUEUE_BATCH_EVENTS,
  type DeliveryCounts,
  type FailedDelivery,
  type JournalRange,
  type PendingDelivery,
} from '../storeRecords.js';
import { deliveryCountsFromRows, fromRow, type DeliveryCountRow, type RowOf } from '../storedRows.js';
import { countRequeue } from './deadLetters.js';
import type { TenantConnection } from './tenantConnection.js';

// The caller draws the seq (the tenant's head plus one, see Journal) and moves the head once per
// ingest, in the same transaction. No ON CONFLICT: ingest appends only events the journal does not
// hold (decideIngest), so a conflict is a broken invariant and fails the transaction.
const INSERT_EVENT = `INSERT INTO events (tenant, seq, event_id, log, object_id, type, performed_at, ingested_at, payload)
  VALUES (@tenant, @seq, @eventId, @log, @objectId, @type, @performedAt, @ingestedAt, @payload)`;
const JOURNALED = 'SELECT event_id FROM events WHERE tenant = ? AND event_id IN (SELECT value FROM json_each(?))';
const INSERT_DELIVERIES = `INSERT INTO deliveries (tenant, sink, seq, updated_at)
  SELECT tenant, name, ?, ? FROM sinks WHERE tenant = ? AND active = 1`;
const pendingSql = (payload: string): string => `SELECT d.seq, e.event_id, e.log, e.object_id, e.type, d.attempts,
    d.next_attempt_at, d.first_attempt_at, e.ingested_at${payload}
  FROM deliveries d JOIN events e ON e.tenant = d.tenant AND e.seq = d.seq
  WHERE d.tenant = ? AND d.sink = ? AND d.state = 'pending' AND d.seq > ?
  ORDER BY d.seq LIMIT ?`;
const PENDING = pendingSql('');
const PENDING_WITH_PAYLOADS = pendingSql(', e.payload');
const SETTLED = `first_attempt_at = COALESCE(first_attempt_at, @now)
  WHERE tenant = @tenant AND sink = @sink AND seq = @seq AND state = 'pending'`;
const DELIVERED = `UPDATE deliveries SET state = 'delivered', attempts = attempts + 1, last_error = NULL, updated_at = @now,
  ${SETTLED}`;
const LAST_DELIVERY = 'UPDATE sink_state SET last_delivery_at = @now WHERE tenant = @tenant AND sink = @sink';
const RETRY = `UPDATE deliveries SET attempts = attempts + 1, next_attempt_at = @nextAttemptAt, last_error = @error,
  last_status = @status, last_response = @response, updated_at = @now, ${SETTLED}`;
const DEAD = `UPDATE deliveries SET state = 'dead', attempts = attempts + 1, last_error = @error, last_status = @status,
  last_response = @response, updated_at = @now, ${SETTLED}`;
const FILTERED = `UPDATE deliveries SET state = 'filtered', updated_at = @now
  WHERE tenant = @tenant AND sink = @sink AND seq = @seq AND state = 'pending'`;
const IN_RANGE = `tenant = @tenant AND (@since IS NULL OR ingested_at >= @since) AND (@until IS NULL OR ingested_at < @until)
    AND (@log IS NULL OR log = @log) AND (@type IS NULL OR type GLOB @type)`;
// One window of seqs [@from, @to) per statement: bounded by the journal positions it reads,
// however rarely the range matches.
const IN_WINDOW = `${IN_RANGE} AND seq >= @from AND seq < @to`;
const ENQUEUE = `INSERT INTO deliveries (tenant, sink, seq, state, updated_at)
  SELECT @tenant, @sink, seq, 'pending', @now FROM events WHERE ${IN_WINDOW}
  ORDER BY seq
  ON CONFLICT (tenant, sink, seq) DO UPDATE SET state = 'pending', attempts = 0, next_attempt_at = 0,
    first_attempt_at = NULL, last_error = NULL, last_status = NULL, last_response = NULL, updated_at = @now`;
const COUNT_RANGE = `SELECT COUNT(*) AS n FROM events WHERE ${IN_WINDOW}`;
// Two subqueries, not MIN and MAX in one: each alone is one step down the primary key.
const SEQ_BOUNDS = `SELECT (SELECT MIN(seq) FROM events WHERE tenant = ?) AS lo,
  (SELECT MAX(seq) FROM events WHERE tenant = ?) AS hi`;
const PAYLOADS = 'SELECT seq, payload FROM events WHERE tenant = ? AND seq IN (SELECT value FROM json_each(?))';
// Counted from the index alone; the oldest pending is the first in seq order, as seqs are drawn in
// ingestion order (one row read, not a MIN over the join).
const COUNTS = `SELECT state, COUNT(*) AS n,
    CASE state WHEN 'pending' THEN (SELECT e.ingested_at FROM deliveries p
      JOIN events e ON e.tenant = p.tenant AND e.seq = p.seq
      WHERE p.tenant = d.tenant AND p.sink = d.sink AND p.state = 'pending' ORDER BY p.seq LIMIT 1) END AS oldest
  FROM deliveries d WHERE tenant = ? AND sink = ? GROUP BY state`;
const PRUNABLE = `FROM events WHERE tenant = @tenant AND ingested_at < @before
  AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.tenant = events.tenant AND d.seq = events.seq AND d.state = 'pending')`;
const PRUNE_BATCH = `DELETE FROM events WHERE tenant = @tenant AND seq IN (SELECT seq ${PRUNABLE} ORDER BY seq LIMIT @limit)
  RETURNING seq`;
// The feed answers 410 to a position below the highest pruned seq (JournalStore).
const PRUNED_THROUGH = `INSERT INTO meta (tenant, key, value) VALUES (@tenant, '${PRUNED_THROUGH_KEY}', @seq)
  ON CONFLICT (tenant, key) DO UPDATE SET value = MAX(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))`;

export class Outbox implements OutboxStore {
  constructor(private readonly conn: TenantConnection) {}

  private get tenant(): string {
    return this.conn.tenant;
  }

  /** Which of the event ids the journal holds, for the ingest transaction: one statement for all of them. */
  journaled(eventIds: readonly string[]): Set<string> {
    if (eventIds.length === 0) return new Set();
    const rows = this.conn
      .statement<[string, string], { event_id: string }>(JOURNALED)
      .all(this.tenant, JSON.stringify(eventIds));
    return new Set(rows.map((r) => r.event_id));
  }

  /**
   * Appends one event at position `seq` and a pending delivery for every active sink. Call inside
   * the ingest transaction, which moves the tenant's head past the seqs it used.
   */
  append(
    event: ChangeCloudEvent,
    args: { seq: number; log: LogKind; objectId: string; performedAt: number | null; now: number },
  ): void {
    this.conn.statement<object>(INSERT_EVENT).run({
      tenant: this.tenant,
      seq: args.seq,
      eventId: event.id,
      log: args.log,
      objectId: args.objectId,
      type: event.type,
      performedAt: args.performedAt,
      ingestedAt: args.now,
      payload: JSON.stringify(event),
    });
    this.conn.statement(INSERT_DELIVERIES).run(args.seq, args.now, this.tenant);
  }

  async payloads(seqs: readonly number[]): Promise<Map<number, string>> {
    const rows = this.conn
      .statement<[string, string], { seq: number; payload: string }>(PAYLOADS)
      .all(this.tenant, JSON.stringify(seqs));
    return new Map(rows.map((r) => [r.seq, r.payload]));
  }

  async pending(sink: string, afterSeq: number, limit: number, withPayloads = false): Promise<PendingDelivery[]> {
    return this.conn
      .statement<[string, string, number, number], RowOf<PendingDelivery>>(
        withPayloads ? PENDING_WITH_PAYLOADS : PENDING,
      )
      .all(this.tenant, sink, afterSeq, limit)
      .map((row) => fromRow<PendingDelivery>(row));
  }

  async markDelivered(sink: string, seqs: readonly number[], now: number): Promise<void> {
    const delivered = this.conn.statement<object>(DELIVERED);
    this.conn.transaction(() => {
      for (const seq of seqs) delivered.run({ tenant: this.tenant, sink, seq, now });
      this.conn.statement(LAST_DELIVERY).run({ tenant: this.tenant, sink, now });
    });
  }

  async scheduleRetry(
    sink: string,
    retries: readonly (FailedDelivery & { nextAttemptAt: number })[],
    now: number,
  ): Promise<void> {
    this.recordFailures(RETRY, sink, retries, now);
  }

  async markDead(sink: string, dead: readonly FailedDelivery[], now: number): Promise<void> {
    this.recordFailures(DEAD, sink, dead, now);
  }

  /** Each failed attempt recorded by `sql` (RETRY or DEAD), in one transaction. */
  private recordFailures(sql: string, sink: string, failures: readonly FailedDelivery[], now: number): void {
    const record = this.conn.statement<object>(sql);
    this.conn.transaction(() => {
      for (const f of failures)
        record.run({ ...f, status: f.status ?? null, response: f.response ?? null, tenant: this.tenant, sink, now });
    });
  }

  async markFiltered(sink: string, seqs: readonly number[], now: number): Promise<void> {
    const filtered = this.conn.statement<object>(FILTERED);
    this.conn.transaction(() => {
      for (const seq of seqs) filtered.run({ tenant: this.tenant, sink, seq, now });
    });
  }

  /**
   * The connection is synchronous and shared by the process's tenants: between batches the event
   * loop serves the others. Each batch that queued something is counted in the re-queue count
   * with it, which a running daemon watches (DeadLetterStore.requeueCount).
   */
  async enqueueFromJournal(sink: string, range: JournalRange, now: number): Promise<number> {
    const enqueue = this.conn.statement<object>(ENQUEUE);
    const parameters = { ...this.rangeParameters(range), sink, now };
    return this.inSeqWindows(REQUEUE_BATCH_EVENTS, (from, to) =>
      this.conn.transaction(() => countRequeue(this.conn, enqueue.run({ ...parameters, from, to }).changes)),
    );
  }

  /** Counted COUNT_WINDOW_EVENTS journal positions per statement, yielding between them. */
  async countFromJournal(range: JournalRange): Promise<number> {
    const count = this.conn.statement<object, { n: number }>(COUNT_RANGE);
    const parameters = this.rangeParameters(range);
    return this.inSeqWindows(COUNT_WINDOW_EVENTS, (from, to) => count.get({ ...parameters, from, to })?.n ?? 0);
  }

  /** Runs `step` on consecutive windows of `size` seqs from the first event to the head, summing what it returns. */
  private async inSeqWindows(size: number, step: (from: number, to: number) => number): Promise<number> {
    const tenant = this.tenant;
    const bounds = this.conn.statement<[string, string], { lo: number | null; hi: number | null }>(SEQ_BOUNDS);
    const { lo, hi } = bounds.get(tenant, tenant) ?? { lo: null, hi: null };
    if (lo === null || hi === null) return 0;
    let total = 0;
    for (let from = lo; from <= hi; from += size) {
      if (from > lo) await new Promise<void>((resolve) => setImmediate(resolve));
      total += step(from, Math.min(from + size, hi + 1));
    }
    return total;
  }

  private rangeParameters(range: JournalRange) {
    return {
      tenant: this.tenant,
      since: range.since ?? null,
      until: range.until ?? null,
      log: range.log ?? null,
      type: range.type ?? null,
    };
  }

  async counts(sink: string): Promise<DeliveryCounts> {
    const rows = this.conn.statement<[string, string], DeliveryCountRow>(COUNTS).all(this.tenant, sink);
    return deliveryCountsFromRows(rows);
  }

  /** Each batch records the highest seq it dropped; between batches the event loop serves the other tenants. */
  async prune(before: number, signal?: AbortSignal): Promise<number> {
    let removed = 0;
    while (!signal?.aborted) {
      const batch = this.conn.transaction(() => {
        const seqs = this.conn
          .statement<object, { seq: number }>(PRUNE_BATCH)
          .all({ tenant: this.tenant, before, limit: PRUNE_BATCH_EVENTS })
          .map((row) => row.seq);
        if (seqs.length > 0)
          this.conn.statement<object>(PRUNED_THROUGH).run({ tenant: this.tenant, seq: String(Math.max(...seqs)) });
        return seqs.length;
      });
      removed += batch;
      if (batch < PRUNE_BATCH_EVENTS) break;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    return removed;
  }
}
