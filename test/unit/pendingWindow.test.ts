import { describe, expect, it } from 'vitest';
import { PendingWindow } from '../../src/deliver/pendingWindow.js';
import type { OutboxStore } from '../../src/store/changefeedStore.js';
import type { PendingDelivery } from '../../src/store/storeRecords.js';

const row = (seq: number): PendingDelivery => ({
  seq,
  eventId: `e${seq}`,
  log: 'skill',
  objectId: `o${seq}`,
  type: 'skill.updated',
  attempts: 0,
  nextAttemptAt: 0,
  firstAttemptAt: null,
  ingestedAt: 0,
});

/** An outbox whose page is answered when the test says: the read's snapshot is taken when it starts. */
function slowOutbox(rows: PendingDelivery[]): { outbox: OutboxStore; answer: () => void } {
  let answer = (): void => undefined;
  const outbox = {
    pending: (_sink: string, after: number, limit: number) => {
      const page = rows
        .filter((r) => r.seq > after)
        .slice(0, limit)
        .map((r) => ({ ...r }));
      return new Promise<PendingDelivery[]>((resolve) => {
        answer = () => resolve(page);
      });
    },
  } as unknown as OutboxStore;
  return { outbox, answer: () => answer() };
}

describe('PendingWindow', () => {
  it('does not take back a row settled while a top-up that read it was under way', async () => {
    const { outbox, answer } = slowOutbox([row(1), row(2), row(3)]);
    const window = new PendingWindow(
      outbox,
      'sink',
      2,
      () => true,
      () => Promise.resolve(),
    );
    // The read starts while seq 1 is still pending in the store (its ack not yet committed)...
    const loading = window.topUp();
    // ...the ack commits and the worker settles the batch, then the read's answer arrives.
    window.settle([row(1)]);
    answer();
    await loading;
    expect([...window.candidates(10)].map((d) => d.seq)).toEqual([2]);
    // Its seat is free: the next top-up fills it with the next row.
    const next = window.topUp();
    answer();
    await next;
    expect([...window.candidates(10)].map((d) => d.seq)).toEqual([2, 3]);
  });
});
