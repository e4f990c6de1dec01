import { logKey } from '../logs.js';
import type { OutboundEvent } from '../sinkContract/sink.js';
import type { PendingDelivery } from '../store/storeRecords.js';

export interface PlannedBatches {
  batches: PendingDelivery[][];
  /** Earliest next_attempt_at among deliveries that are waiting; undefined when none waits. */
  nextDueAt: number | undefined;
}

/**
 * Chooses what to send next, keeping each object's events in order.
 *
 * Deliveries come in seq order. A key (one career, one skill, the identity-provider log) is
 * blocked from the first of its deliveries that cannot go now: it is in flight, not yet due, or
 * does not fit its batch. Every later delivery of a blocked key waits, so a failing event holds
 * back only its own object. All chosen deliveries of a key go into one batch, so two batches in
 * flight never share a key.
 */
export function planBatches(args: {
  pages: Iterable<PendingDelivery>;
  now: number;
  inFlightKeys: ReadonlySet<string>;
  maxBatches: number;
  maxBatchSize: number;
  /** The largest batch a delivery may join (smaller for an event under poison search). */
  batchCap?: (d: PendingDelivery) => number;
}): PlannedBatches {
  const batches: PendingDelivery[][] = [];
  const batchOfKey = new Map<string, PendingDelivery[]>();
  // A batch is as large as its most restricted member allows.
  const capOf = new Map<PendingDelivery[], number>();
  const blocked = new Set<string>(args.inFlightKeys);
  const capFor = (d: PendingDelivery): number =>
    Math.max(1, Math.min(args.maxBatchSize, args.batchCap?.(d) ?? args.maxBatchSize));
  const hasRoom = (batch: PendingDelivery[], cap: number): boolean =>
    batch.length < Math.min(cap, capOf.get(batch) ?? args.maxBatchSize);
  let nextDueAt: number | undefined;
  for (const d of args.pages) {
    const last = batches.at(-1);
    if (batches.length >= args.maxBatches && last && last.length >= args.maxBatchSize) break;
    const key = logKey(d);
    if (blocked.has(key)) continue;
    if (d.nextAttemptAt > args.now) {
      blocked.add(key);
      nextDueAt = nextDueAt === undefined ? d.nextAttemptAt : Math.min(nextDueAt, d.nextAttemptAt);
      continue;
    }
    const cap = capFor(d);
    let batch = batchOfKey.get(key);
    if (!batch) {
      const open = batches.at(-1);
      if (open && hasRoom(open, cap)) batch = open;
      else if (batches.length < args.maxBatches) {
        batch = [];
        batches.push(batch);
      } else {
        blocked.add(key);
        continue;
      }
      batchOfKey.set(key, batch);
    }
    if (!hasRoom(batch, cap)) {
      blocked.add(key);
      continue;
    }
    batch.push(d);
    capOf.set(batch, Math.min(cap, capOf.get(batch) ?? args.maxBatchSize));
  }
  return { batches, nextDueAt };
}

/** A batch as the sink sees it: each delivery with its stored CloudEvent JSON, byte for byte. */
export function toOutboundEvents(
  batch: readonly PendingDelivery[],
  payloads: ReadonlyMap<number, string>,
  tenant: string,
): OutboundEvent[] {
  return batch.map((d) => ({
    seq: d.seq,
    tenant,
    id: d.eventId,
    type: d.type,
    log: d.log,
    objectId: d.objectId,
    orderingKey: logKey(d),
    json: payloads.get(d.seq) ?? '',
    attempt: d.attempts + 1,
  }));
}
