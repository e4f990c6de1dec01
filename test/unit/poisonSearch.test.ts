import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isPoison, poisonBatchCap } from '../../src/deliver/poisonSearch.js';
import { SinkWorker } from '../../src/deliver/sinkWorker.js';
import { noopLogger } from '../support/noopLogger.js';
import { makeTempDir } from '../support/tempDir.js';
import { withVirtualTime } from '../support/virtualTime.js';
import { ScriptedSink, ingestEntries, openStore, testClock, testDelivery } from './scriptedSink.js';

describe('poisonBatchCap', () => {
  it.each([
    [0, 5, 8, 8],
    [4, 5, 8, 8],
    [5, 5, 8, 4],
    [6, 5, 8, 2],
    [7, 5, 8, 1],
    [30, 5, 8, 1],
    [30, 0, 8, 8],
    [5, 5, 500, 250],
  ])('after %d failures, strikes %d, batch size %d: %d', (attempts, strikes, batchSize, cap) => {
    expect(poisonBatchCap(attempts, strikes, batchSize)).toBe(cap);
  });
});

describe('isPoison', () => {
  const base = { batchLength: 1, attempts: 6, strikes: 5, firstAttemptAt: 1_000, lastSuccessAt: 2_000 };
  it.each([
    ['alone, struck out, others got through since', base, true],
    ['still in a batch of two', { ...base, batchLength: 2 }, false],
    ['fewer failures than strikes', { ...base, attempts: 4 }, false],
    ['nothing got through since it first failed: the destination is down', { ...base, lastSuccessAt: 500 }, false],
    ['nothing ever got through', { ...base, lastSuccessAt: null }, false],
    ['search off', { ...base, strikes: 0 }, false],
  ])('%s', (_name, args, expected) => {
    expect(isPoison(args)).toBe(expected);
  });
});

// A batch sink (file, brokers) whose destination could not take one event failed the whole batch
// every time: the same batch was retried for ever and its object never moved again.
describe('a batch the destination keeps refusing because of one event', () => {
  it(
    'is narrowed down to that event, which becomes a dead letter; every other event is ' + 'delivered in order',
    async () => {
      const clock = testClock();
      const store = await openStore(join(makeTempDir(), 's.sqlite'), ['out']);
      const ids = await ingestEntries(store, 'career', 'c-1', ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']);
      const other = await ingestEntries(store, 'career', 'c-2', ['x', 'y']);
      const poison = ids[4] as string;
      const sink = new ScriptedSink(
        'out',
        (batch) => {
          if (batch.some((e) => e.id === poison)) throw new Error('broker refused the message: too large');
        },
        clock,
      );
      const worker = new SinkWorker({
        sink,
        store,
        clock,
        logger: noopLogger,
        delivery: testDelivery({
          retry: { initialDelayMs: 1_000, maxDelayMs: 60_000, maxAttempts: 0, maxAgeSeconds: 0 },
          poison: { strikes: 3 },
          batchSize: 8,
        }),
        random: () => 0.5,
      });
      await withVirtualTime(clock, worker.run(new AbortController().signal, { deadline: clock.now() + 86_400_000 }));
      expect((await store.outbox.counts(sink.name)).pending).toBe(0);
      const dead = await store.deadLetters.list();
      expect(dead.map((d) => d.eventId)).toEqual([poison]);
      expect(dead[0]?.lastError).toMatch(
        /^poison: failed alone \d+ times while the destination took other events: .*too large/,
      );
      const delivered = new Set(sink.accepted);
      expect([...ids.filter((id) => id !== poison), ...other].every((id) => delivered.has(id))).toBe(true);
      // Order per object: the last copy of each event arrives in ingestion order.
      const lastCopies = sink.accepted.filter((id, i) => sink.accepted.indexOf(id, i + 1) === -1);
      expect(lastCopies.filter((id) => ids.includes(id))).toEqual(ids.filter((id) => id !== poison));
      // The search halved the batch: batches holding the poison event shrank to one.
      const poisonBatches = sink.batches.filter((b) => b.some((e) => e.id === poison)).map((b) => b.length);
      expect(poisonBatches.at(-1)).toBe(1);
      await store.close();
    },
  );

  it('is not judged poison while the destination takes nothing at all', async () => {
    const clock = testClock();
    const store = await openStore(join(makeTempDir(), 's.sqlite'), ['out']);
    await ingestEntries(store, 'career', 'c-1', ['a', 'b', 'c', 'd']);
    const sink = new ScriptedSink(
      'out',
      () => {
        throw new Error('destination down');
      },
      clock,
    );
    const worker = new SinkWorker({
      sink,
      store,
      clock,
      logger: noopLogger,
      delivery: testDelivery({
        retry: { initialDelayMs: 1_000, maxDelayMs: 60_000, maxAttempts: 0, maxAgeSeconds: 0 },
        poison: { strikes: 2 },
        batchSize: 4,
      }),
      random: () => 0.5,
    });
    await withVirtualTime(clock, worker.run(new AbortController().signal, { deadline: clock.now() + 3_600_000 }));
    expect(await store.deadLetters.list()).toEqual([]);
    expect((await store.outbox.counts('out')).pending).toBe(4);
    await store.close();
  });
});
