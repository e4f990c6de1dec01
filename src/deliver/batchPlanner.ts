import type { PendingDelivery } from '../store/outbox.js';

export interface PlannedBatches {
  batches: PendingDelivery[][];
  /** Earliest next_attempt_at among deliveries that are waiting; undefined when none waits. */
  nextDueAt: number | undefined;
}

export const orderingKeyOf = (d: { log: string; objectId: string }): string => `${d.log}:${d.objectId}`;

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
}): PlannedBatches {
  const batches: PendingDelivery[][] = [];
  const batchOfKey = new Map<string, PendingDelivery[]>();
  const blocked = new Set<string>(args.inFlightKeys);
  let nextDueAt: number | undefined;
  for (const d of args.pages) {
    const last = batches.at(-1);
    if (batches.length >= args.maxBatches && last && last.length >= args.maxBatchSize) break;
    const key = orderingKeyOf(d);
    if (blocked.has(key)) continue;
    if (d.nextAttemptAt > args.now) {
      blocked.add(key);
      nextDueAt = nextDueAt === undefined ? d.nextAttemptAt : Math.min(nextDueAt, d.nextAttemptAt);
      continue;
    }
    let batch = batchOfKey.get(key);
    if (!batch) {
      const open = batches.at(-1);
      if (open && open.length < args.maxBatchSize) batch = open;
      else if (batches.length < args.maxBatches) {
        batch = [];
        batches.push(batch);
      } else {
        blocked.add(key);
        continue;
      }
      batchOfKey.set(key, batch);
    }
    if (batch.length >= args.maxBatchSize) {
      blocked.add(key);
      continue;
    }
    batch.push(d);
  }
  return { batches, nextDueAt };
}
