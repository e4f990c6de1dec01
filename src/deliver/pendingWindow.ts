import { logKey, type LogKind } from '../logs.js';
import type { OutboxStore } from '../store/changefeedStore.js';
import type { PendingDelivery } from '../store/storeRecords.js';

const LOAD_PAGE = 1_000;
/**
 * Rows of the first page read into an empty window, read with their payloads: a sink that keeps
 * up empties its window with every batch, and its next rows are sent at once, so their payloads
 * come with them instead of in a read of their own before each batch. Few, so a window holds at
 * most this many payloads (another such page is read only once it is empty again).
 */
const PAYLOAD_PAGE = 100;

/**
 * A sink's pending deliveries held in memory, queued per object in seq order, so planning reads
 * each outbox row once instead of rescanning deep per-object backlogs for every batch.
 *
 * Rows are loaded in seq order up to `capacity`; rows ingested later have higher seqs and are
 * loaded on the next top-up. The worker reports every outcome here as it records it in the store.
 * Rows that change state outside the worker (dead letters re-queued by the CLI) have old seqs;
 * they are picked up when the window has emptied and restarts from the beginning of the outbox.
 */
export class PendingWindow {
  private readonly queues = new Map<string, PendingDelivery[]>();
  private loadedUpTo = 0;
  private size = 0;
  /**
   * Seqs settled while a top-up is under way: its page may have been read before their outcome
   * was recorded, and must not bring them back (the worker would send a delivered row again).
   */
  private settledDuringLoad: Set<number> | undefined;

  constructor(
    private readonly outbox: OutboxStore,
    private readonly sink: string,
    private readonly capacity: number,
    /** False for deliveries this sink's filter excludes; they are settled as filtered on load. */
    private readonly accepts: (event: { log: LogKind; type: string }) => boolean,
    private readonly onFiltered: (seqs: number[]) => Promise<void>,
  ) {}

  /** Forgets what is held, so the next top-up reads the outbox from its start (re-queued rows have old seqs). */
  reload(): void {
    this.queues.clear();
    this.size = 0;
    this.loadedUpTo = 0;
  }

  /** Loads rows ingested since the last load, up to capacity; returns how many were filtered out. */
  async topUp(): Promise<number> {
    if (this.size === 0) this.loadedUpTo = 0;
    const settled = new Set<number>();
    this.settledDuringLoad = settled;
    try {
      return await this.load(settled);
    } finally {
      this.settledDuringLoad = undefined;
    }
  }

  private async load(settled: ReadonlySet<number>): Promise<number> {
    let filtered = 0;
    let withPayloads = this.size === 0;
    while (this.size < this.capacity) {
      const pageSize = withPayloads ? PAYLOAD_PAGE : LOAD_PAGE;
      const page = await this.outbox.pending(
        this.sink,
        this.loadedUpTo,
        Math.min(pageSize, this.capacity - this.size),
        withPayloads,
      );
      withPayloads = false;
      const rejected: number[] = [];
      for (const d of page) {
        this.loadedUpTo = d.seq;
        if (settled.has(d.seq)) continue;
        if (!this.accepts(d)) {
          rejected.push(d.seq);
          continue;
        }
        const key = logKey(d);
        const queue = this.queues.get(key);
        if (queue) queue.push(d);
        else this.queues.set(key, [d]);
        this.size++;
      }
      if (rejected.length > 0) await this.onFiltered(rejected);
      filtered += rejected.length;
      if (page.length < pageSize) break;
    }
    return filtered;
  }

  /**
   * Candidates for planning: each object's first `perKey` deliveries, objects in the order their
   * first delivery was loaded. Enough for a planner that takes at most `perKey` per object.
   */
  *candidates(perKey: number): Generator<PendingDelivery> {
    for (const queue of this.queues.values()) {
      for (let i = 0; i < queue.length && i < perKey; i++) yield queue[i] as PendingDelivery;
    }
  }

  /** Delivered, dead or otherwise settled: no longer pending. */
  settle(deliveries: readonly { log: LogKind; objectId: string; seq: number }[]): void {
    for (const d of deliveries) {
      this.settledDuringLoad?.add(d.seq);
      const key = logKey(d);
      const queue = this.queues.get(key);
      if (!queue) continue;
      const index = queue.findIndex((q) => q.seq === d.seq);
      if (index < 0) continue;
      queue.splice(index, 1);
      this.size--;
      if (queue.length === 0) this.queues.delete(key);
    }
  }

  /** A failed attempt: the delivery stays, with its new attempt count and next attempt time. */
  retryLater(delivery: PendingDelivery, nextAttemptAt: number, now: number): void {
    const row = this.queues.get(logKey(delivery))?.find((q) => q.seq === delivery.seq);
    if (!row) return;
    row.attempts++;
    row.nextAttemptAt = nextAttemptAt;
    row.firstAttemptAt ??= now;
  }
}
