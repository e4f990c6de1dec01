import type { LogKind } from '../../logs.js';
import type { OutboxStore } from '../changefeedStore.js';
import {
  COUNT_WINDOW_EVENTS,
  PRUNED_THROUGH_KEY,
  PRUNE_BATCH_EVENTS,
  REQUEUE_BATCH_EVENTS,
  REQUEUE_COUNT_KEY,
  type DeliveryCounts,
  type FailedDelivery,
  type JournalRange,
  type PendingDelivery,
} from '../storeRecords.js';
import { deliveryCountsFromRows, fromRow, type DeliveryCountRow, type RowOf } from '../storedRows.js';
import { BatchedRead, sinkKey } from './batchedRead.js';
import type { Query, TenantDb } from './tenantDb.js';
import { globToLike } from './globPattern.js';
import { storableText } from './storableText.js';

/** The events a replay takes (JournalRange): $1 tenant, $2 since, $3 until, $4 log, $5 the type as a LIKE pattern. */
const IN_RANGE = `tenant = $1 AND ($2::float8 IS NULL OR ingested_at >= $2) AND ($3::float8 IS NULL OR ingested_at < $3)
  AND ($4::text IS NULL OR log = $4) AND ($5::text IS NULL OR type LIKE $5 ESCAPE '\\')`;
/** One window of seqs, [$6, $7), per statement: bounded by the journal positions it reads, however rarely the range matches. */
const IN_WINDOW = `${IN_RANGE} AND seq >= $6 AND seq < $7`;

type SinkCountRow = DeliveryCountRow & { tenant: string; sink: string };

/**
 * Every asking tenant's outbox counts of one sink each, in one statement (BatchedRead): as
 * SQLite's, counted from the index, the oldest pending being the first in journal order.
 */
export function outboxCountsRead(): BatchedRead<SinkCountRow> {
  return new BatchedRead<SinkCountRow>(
    (keys) => {
      const asked = keys.map((key) => key.split('\u0000'));
      return {
        sql: `SELECT d.tenant, d.sink, d.state, COUNT(*) AS n,
                CASE d.state WHEN 'pending' THEN (SELECT e.ingested_at FROM deliveries p
                  JOIN events e ON e.tenant = p.tenant AND e.seq = p.seq
                  WHERE p.tenant = d.tenant AND p.sink = d.sink AND p.state = 'pending' ORDER BY p.seq LIMIT 1) END AS oldest
              FROM unnest($1::text[], $2::text[]) AS asked (tenant, sink)
              JOIN deliveries d ON d.tenant = asked.tenant AND d.sink = asked.sink
              GROUP BY d.tenant, d.sink, d.state`,
        params: [asked.map(([tenant]) => tenant), asked.map(([, sink]) => sink)],
      };
    },
    (row) => sinkKey(row.tenant, row.sink),
  );
}

/** An event ready to append: its CloudEvent JSON and what the journal indexes it by. */
export interface NewEvent {
  eventId: string;
  type: string;
  performedAt: number | null;
  payload: string;
}

export class PostgresOutbox implements OutboxStore {
  constructor(
    private readonly db: TenantDb,
    private readonly countsRead: BatchedRead<SinkCountRow>,
  ) {}

  /**
   * Part of the ingest transaction: appends the events in the given order, a pending delivery for
   * each active sink, and moves the tenant's journal head, in one statement. Seqs are drawn in
   * the order of `ord` (INSERT ... SELECT ... ORDER BY). No ON CONFLICT: ingest appends only
   * events the journal does not hold (decideIngest), so a conflict is a broken invariant and
   * fails the transaction.
   */
  append(query: Query, events: readonly NewEvent[], args: { log: LogKind; objectId: string; now: number }): void {
    if (events.length === 0) return;
    query.later(
      `WITH fresh AS (
         INSERT INTO events (tenant, event_id, log, object_id, type, performed_at, ingested_at, payload)
         SELECT $1, u.event_id, $2, $3, u.type, u.performed_at, $4, u.payload
         FROM unnest($5::text[], $6::text[], $7::float8[], $8::text[]) WITH ORDINALITY
           AS u (event_id, type, performed_at, payload, ord)
         ORDER BY u.ord
         RETURNING seq
       ), queued AS (
         INSERT INTO deliveries (tenant, sink, seq, updated_at)
         SELECT $1, s.name, f.seq, $4 FROM fresh f CROSS JOIN sinks s WHERE s.tenant = $1 AND s.active
       ), head AS (
         UPDATE journal_heads SET head = GREATEST(head, (SELECT MAX(seq) FROM fresh))
         WHERE tenant = $1 AND EXISTS (SELECT 1 FROM fresh)
       )
       SELECT 1`,
      [
        this.db.tenant,
        args.log,
        args.objectId,
        args.now,
        events.map((e) => e.eventId),
        events.map((e) => storableText(e.type)),
        events.map((e) => e.performedAt),
        events.map((e) => e.payload),
      ],
    );
  }

  async payloads(seqs: readonly number[]): Promise<Map<number, string>> {
    if (seqs.length === 0) return new Map();
    const rows = await this.db.read<{ seq: number; payload: string }>(
      'SELECT seq, payload FROM events WHERE tenant = $1 AND seq = ANY($2::bigint[])',
      [this.db.tenant, seqs],
    );
    return new Map(rows.map((r) => [r.seq, r.payload]));
  }

  async pending(sink: string, afterSeq: number, limit: number, withPayloads = false): Promise<PendingDelivery[]> {
    const rows = await this.db.read<RowOf<PendingDelivery>>(
      `SELECT d.seq, e.event_id, e.log, e.object_id, e.type, d.attempts, d.next_attempt_at, d.first_attempt_at,
              e.ingested_at${withPayloads ? ', e.payload' : ''}
       FROM deliveries d JOIN events e ON e.tenant = d.tenant AND e.seq = d.seq
       WHERE d.tenant = $1 AND d.sink = $2 AND d.state = 'pending' AND d.seq > $3
       ORDER BY d.seq LIMIT $4`,
      [this.db.tenant, sink, afterSeq, limit],
    );
    return rows.map((row) => fromRow<PendingDelivery>(row));
  }

  /**
   * The deliveries and the sink's last delivery in one statement (see OutboxStore.markDelivered),
   * which checks the tenant's lease itself (TenantDb.writeFencedAlone): one round trip, not three.
   */
  async markDelivered(sink: string, seqs: readonly number[], now: number): Promise<void> {
    await this.db.writeFencedAlone(
      (lease) => `WITH ${lease},
       delivered AS (
         UPDATE deliveries SET state = 'delivered', attempts = attempts + 1, last_error = NULL, updated_at = $4,
           first_attempt_at = COALESCE(first_attempt_at, $4)
         WHERE EXISTS (SELECT FROM lease) AND tenant = $1 AND sink = $2 AND seq = ANY($3::bigint[]) AND state = 'pending'
       ),
       recorded AS (
         UPDATE sink_state SET last_delivery_at = $4 WHERE EXISTS (SELECT FROM lease) AND tenant = $1 AND sink = $2
       )
       SELECT EXISTS (SELECT FROM lease) AS held`,
      [this.db.tenant, sink, seqs, now],
    );
  }

  async scheduleRetry(
    sink: string,
    retries: readonly (FailedDelivery & { nextAttemptAt: number })[],
    now: number,
  ): Promise<void> {
    await this.recordFailures('pending', sink, retries, now);
  }

  async markDead(sink: string, dead: readonly FailedDelivery[], now: number): Promise<void> {
    await this.recordFailures('dead', sink, dead, now);
  }

  /** Each failed attempt in one statement: still pending (retried at its nextAttemptAt), or dead. */
  private async recordFailures(
    state: 'pending' | 'dead',
    sink: string,
    failures: readonly (FailedDelivery & { nextAttemptAt?: number })[],
    now: number,
  ): Promise<void> {
    await this.db.writeOne(
      `UPDATE deliveries d SET state = $9, attempts = d.attempts + 1,
         next_attempt_at = COALESCE(r.next_attempt_at, d.next_attempt_at), last_error = r.error,
         last_status = r.status, last_response = r.response, updated_at = $8,
         first_attempt_at = COALESCE(d.first_attempt_at, $8)
       FROM unnest($3::bigint[], $4::float8[], $5::text[], $6::int[], $7::text[])
         AS r (seq, next_attempt_at, error, status, response)
       WHERE d.tenant = $1 AND d.sink = $2 AND d.seq = r.seq AND d.state = 'pending'`,
      [
        this.db.tenant,
        sink,
        failures.map((f) => f.seq),
        failures.map((f) => f.nextAttemptAt ?? null),
        failures.map((f) => storableText(f.error)),
        failures.map((f) => f.status ?? null),
        failures.map((f) => storableText(f.response ?? null)),
        now,
        state,
      ],
    );
  }

  async markFiltered(sink: string, seqs: readonly number[], now: number): Promise<void> {
    await this.db.writeOne(
      `UPDATE deliveries SET state = 'filtered', updated_at = $4
       WHERE tenant = $1 AND sink = $2 AND seq = ANY($3::bigint[]) AND state = 'pending'`,
      [this.db.tenant, sink, seqs, now],
    );
  }

  /**
   * Each window of positions is one statement, its own fenced transaction, which also counts
   * itself in the re-queue count (DeadLetterStore.requeueCount) when it queued something: the
   * daemon holding the tenant learns of a `replay --queue-only` from that count, not by reading
   * its outbox now and then.
   */
  async enqueueFromJournal(sink: string, range: JournalRange, now: number): Promise<number> {
    const parameters = this.rangeParameters(range);
    return this.inSeqWindows(REQUEUE_BATCH_EVENTS, async (from, to) => {
      const result = await this.db.writeOne<{ n: string }>(
        `WITH queued AS (
           INSERT INTO deliveries (tenant, sink, seq, state, updated_at)
           SELECT $1, $9, seq, 'pending', $8 FROM events WHERE ${IN_WINDOW}
           ORDER BY seq
           ON CONFLICT (tenant, sink, seq) DO UPDATE SET state = 'pending', attempts = 0, next_attempt_at = 0,
             first_attempt_at = NULL, last_error = NULL, last_status = NULL, last_response = NULL, updated_at = $8
           RETURNING seq
         ), counted AS (
           INSERT INTO meta (tenant, key, value) SELECT $1, '${REQUEUE_COUNT_KEY}', '1' WHERE EXISTS (SELECT 1 FROM queued)
           ON CONFLICT (tenant, key) DO UPDATE SET value = (meta.value::bigint + 1)::text
         )
         SELECT COUNT(*) AS n FROM queued`,
        [...parameters, from, to, now, sink],
      );
      return Number(result.rows[0]?.n ?? 0);
    });
  }

  /** Counted COUNT_WINDOW_EVENTS journal positions per statement. */
  async countFromJournal(range: JournalRange): Promise<number> {
    const parameters = this.rangeParameters(range);
    return this.inSeqWindows(COUNT_WINDOW_EVENTS, async (from, to) => {
      const rows = await this.db.read<{ n: string }>(`SELECT COUNT(*) AS n FROM events WHERE ${IN_WINDOW}`, [
        ...parameters,
        from,
        to,
      ]);
      return Number(rows[0]?.n ?? 0);
    });
  }

  /** Runs `step` on consecutive windows of `size` seqs from the first event to the head, summing what it returns. */
  private async inSeqWindows(size: number, step: (from: number, to: number) => Promise<number>): Promise<number> {
    const [bounds] = await this.db.read<{ lo: string | null; hi: string | null }>(
      `SELECT (SELECT MIN(seq) FROM events WHERE tenant = $1) AS lo, (SELECT MAX(seq) FROM events WHERE tenant = $1) AS hi`,
      [this.db.tenant],
    );
    if (bounds?.lo == null || bounds.hi == null) return 0;
    const lo = Number(bounds.lo);
    const hi = Number(bounds.hi);
    let total = 0;
    for (let from = lo; from <= hi; from += size) total += await step(from, Math.min(from + size, hi + 1));
    return total;
  }

  private rangeParameters(range: JournalRange): unknown[] {
    const type = range.type === undefined ? null : globToLike(range.type);
    return [this.db.tenant, range.since ?? null, range.until ?? null, range.log ?? null, type];
  }

  /** Read with the counts other tenants ask for in the same turn (a scrape asks every tenant at once). */
  async counts(sink: string): Promise<DeliveryCounts> {
    return deliveryCountsFromRows(await this.countsRead.rowsOf(this.db, sinkKey(this.db.tenant, sink)));
  }

  /** Each batch is one fenced transaction: a long prune never holds its lease row's lock for long. */
  async prune(before: number, signal?: AbortSignal): Promise<number> {
    let removed = 0;
    while (!signal?.aborted) {
      const batch = await this.pruneBatch(before);
      removed += batch;
      if (batch < PRUNE_BATCH_EVENTS) break;
    }
    return removed;
  }

  /**
   * One batch of the prune, and the highest seq it dropped recorded (the feed answers 410 below
   * it), in one statement: what is recorded is exactly what was deleted, even while deliveries
   * settle concurrently.
   */
  private async pruneBatch(before: number): Promise<number> {
    const result = await this.db.writeOne<{ n: number }>(
      `WITH doomed AS (
         SELECT seq FROM events WHERE tenant = $1 AND ingested_at < $2
           AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.tenant = events.tenant AND d.seq = events.seq
                           AND d.state = 'pending')
         ORDER BY seq LIMIT $3
       ), gone AS (
         DELETE FROM events e USING doomed WHERE e.tenant = $1 AND e.seq = doomed.seq
         RETURNING e.seq
       ), through AS (
         INSERT INTO meta (tenant, key, value)
         SELECT $1, '${PRUNED_THROUGH_KEY}', MAX(seq)::text FROM gone HAVING MAX(seq) IS NOT NULL
         ON CONFLICT (tenant, key) DO UPDATE SET value = GREATEST(meta.value::bigint, excluded.value::bigint)::text
       )
       SELECT COUNT(*) AS n FROM gone`,
      [this.db.tenant, before, PRUNE_BATCH_EVENTS],
    );
    return result.rows[0]?.n ?? 0;
  }
}
