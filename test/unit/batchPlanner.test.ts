import { describe, expect, it } from 'vitest';
import { planBatches } from '../../src/deliver/batchPlanner.js';
import { logKey, type LogKind } from '../../src/logs.js';
import { Random } from '../../src/simulator/random.js';
import type { PendingDelivery } from '../../src/store/storeRecords.js';

const NOW = 1_000_000;
let nextSeq = 1;

/** A pending delivery of object `key` ("c1", "s2", or "idp" for the identity-provider log). */
function d(key: string, over: Partial<PendingDelivery> = {}): PendingDelivery {
  const log: LogKind = key === 'idp' ? 'identity_provider' : key.startsWith('s') ? 'skill' : 'career';
  const seq = over.seq ?? nextSeq++;
  return {
    seq,
    eventId: `${key}#${seq}`,
    log,
    objectId: key === 'idp' ? '' : key,
    type: 'com.test.x.y',
    attempts: 0,
    nextAttemptAt: 0,
    firstAttemptAt: null,
    ingestedAt: 0,
    ...over,
  };
}

function plan(
  pages: PendingDelivery[],
  opts: { inFlight?: string[]; maxBatches?: number; maxBatchSize?: number } = {},
) {
  const result = planBatches({
    pages,
    now: NOW,
    inFlightKeys: new Set(opts.inFlight ?? []),
    maxBatches: opts.maxBatches ?? 10,
    maxBatchSize: opts.maxBatchSize ?? 100,
  });
  return { ...result, ids: result.batches.map((b) => b.map((x) => x.eventId)) };
}

describe('planBatches', () => {
  it('keys deliveries by log and object', () => {
    expect(logKey({ log: 'career', objectId: 'c1' })).toBe('career:c1');
    expect(logKey({ log: 'skill', objectId: 'c1' })).not.toBe(logKey({ log: 'career', objectId: 'c1' }));
    expect(logKey({ log: 'identity_provider', objectId: '' })).toBe('identity_provider:');
  });

  it('keeps each key in seq order and fills one batch while it has room', () => {
    const pages = [
      d('c1', { seq: 1 }),
      d('c2', { seq: 2 }),
      d('c1', { seq: 3 }),
      d('idp', { seq: 4 }),
      d('c2', { seq: 5 }),
    ];
    expect(plan(pages).ids).toEqual([['c1#1', 'c2#2', 'c1#3', 'idp#4', 'c2#5']]);
  });

  it('skips every delivery of a key that is in flight', () => {
    const pages = [d('c1', { seq: 1 }), d('c2', { seq: 2 }), d('c1', { seq: 3 })];
    expect(plan(pages, { inFlight: ['career:c1'] }).ids).toEqual([['c2#2']]);
  });

  it('holds a key back from its first delivery that is not yet due, even when later ones are', () => {
    const pages = [
      d('c1', { seq: 1 }),
      d('c1', { seq: 2, nextAttemptAt: NOW + 5_000 }),
      d('c1', { seq: 3 }),
      d('c2', { seq: 4 }),
    ];
    const result = plan(pages);
    expect(result.ids).toEqual([['c1#1', 'c2#4']]);
    expect(result.nextDueAt).toBe(NOW + 5_000);
  });

  it('treats a delivery due exactly now as due', () => {
    expect(plan([d('c1', { seq: 1, nextAttemptAt: NOW })]).ids).toEqual([['c1#1']]);
  });

  it('reports the earliest waiting head as nextDueAt, and undefined when nothing waits', () => {
    const pages = [
      d('c1', { seq: 1, nextAttemptAt: NOW + 9_000 }),
      d('c2', { seq: 2, nextAttemptAt: NOW + 3_000 }),
      d('c2', { seq: 3, nextAttemptAt: NOW + 1_000 }),
    ];
    expect(plan(pages).nextDueAt).toBe(NOW + 3_000);
    expect(plan([d('c1', { seq: 4 })]).nextDueAt).toBeUndefined();
  });

  it('never splits a key across batches: a key whose batch is full waits for the next plan', () => {
    const pages = [
      d('c1', { seq: 1 }),
      d('c1', { seq: 2 }),
      d('c1', { seq: 3 }),
      d('c2', { seq: 4 }),
      d('c1', { seq: 5 }),
      d('c2', { seq: 6 }),
    ];
    const result = plan(pages, { maxBatchSize: 2 });
    expect(result.ids).toEqual([
      ['c1#1', 'c1#2'],
      ['c2#4', 'c2#6'],
    ]);
    const batchesOfKey = (key: string) => result.batches.filter((b) => b.some((x) => logKey(x) === key)).length;
    expect(batchesOfKey('career:c1')).toBe(1);
    expect(batchesOfKey('career:c2')).toBe(1);
  });

  it('respects maxBatches and maxBatchSize, blocking keys that no longer fit', () => {
    const pages = ['c1', 'c2', 'c3', 'c4', 'c5', 'c1', 'c5'].map((key, i) => d(key, { seq: i + 1 }));
    const result = plan(pages, { maxBatches: 2, maxBatchSize: 2 });
    expect(result.ids).toEqual([
      ['c1#1', 'c2#2'],
      ['c3#3', 'c4#4'],
    ]);
    for (const batch of result.batches) expect(batch.length).toBeLessThanOrEqual(2);
  });

  it('stops reading pages once every batch is full', () => {
    let read = 0;
    function* pages(): Generator<PendingDelivery> {
      for (let seq = 1; seq <= 1_000; seq++) {
        read++;
        yield d(`c${seq}`, { seq });
      }
    }
    const result = planBatches({ pages: pages(), now: NOW, inFlightKeys: new Set(), maxBatches: 2, maxBatchSize: 3 });
    expect(result.batches.flat()).toHaveLength(6);
    expect(read).toBeLessThan(10);
  });

  it('plans nothing from an empty outbox', () => {
    expect(plan([])).toMatchObject({ batches: [], nextDueAt: undefined });
  });
});

// PendingWindow.candidates(perKey) yields each object's first perKey deliveries, the planner's
// maxBatchSize: its plans are the same as from perKey + 1 (13f36de), the next one being only ever
// passed over, its key already full; the wake time can differ only when batches go out, and is
// then not read (SinkWorker waits on the batches in flight).
describe('planBatches from each object first maxBatchSize deliveries', () => {
  it('plans as from one more per object, on 2,000 random windows', () => {
    const random = Random.derive('planBatches', 'first maxBatchSize');
    const pick = (n: number): number => random.int(0, n - 1);
    for (let run = 0; run < 2_000; run++) {
      const maxBatchSize = 1 + pick(4);
      const queues = new Map<string, PendingDelivery[]>();
      for (let i = 0; i < 1 + pick(30); i++) {
        const key = ['c1', 'c2', 's1', 's2', 'idp'][pick(5)]!;
        const delivery = d(key, { nextAttemptAt: pick(4) === 0 ? NOW + 1 + pick(1_000) : 0, attempts: pick(8) });
        queues.set(key, [...(queues.get(key) ?? []), delivery]);
      }
      const firstOfEach = (perKey: number): PendingDelivery[] =>
        [...queues.values()].flatMap((q) => q.slice(0, perKey));
      const args = {
        now: NOW,
        inFlightKeys: new Set(pick(3) === 0 ? ['c1'] : []),
        maxBatches: 1 + pick(4),
        maxBatchSize,
        batchCap: (x: PendingDelivery) => Math.max(1, Math.floor(maxBatchSize / 2 ** Math.max(0, x.attempts - 4))),
      };
      const exact = planBatches({ ...args, pages: firstOfEach(maxBatchSize) });
      const oneMore = planBatches({ ...args, pages: firstOfEach(maxBatchSize + 1) });
      expect(exact.batches).toEqual(oneMore.batches);
      if (exact.batches.length === 0) expect(exact.nextDueAt).toBe(oneMore.nextDueAt);
    }
  });
});
