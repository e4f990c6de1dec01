import { describe, expect, it } from 'vitest';
import { buildCloudEvent } from '../../../src/events/cloudEvent.js';
import { COUNT_WINDOW_EVENTS, PRUNE_BATCH_EVENTS, REQUEUE_BATCH_EVENTS } from '../../../src/store/storeRecords.js';
import {
  BASE_URL,
  entry,
  entryIdsInJournal,
  EVENTS,
  HOUR,
  ingest,
  pendingEntryIds,
  seqOf,
  T,
  type OpenFresh,
} from './storeFixtures.js';

/** Deliveries per sink: their states, counts, replay, pruning and dead letters. */
export function defineOutboxContract(openFresh: OpenFresh): void {
  describe('sinks and the outbox', () => {
    it('gives a sink registered later only the events ingested after it, and an inactive sink none', async () => {
      const { store } = await openFresh(['a']);
      await ingest(store, [entry('e-1')]);
      expect(
        await store.sinks.activate(
          [
            { name: 'a', type: 'file' },
            { name: 'b', type: 'stdout' },
          ],
          T,
        ),
      ).toEqual(['b']);
      await ingest(store, [entry('e-2')]);
      expect(await pendingEntryIds(store, 'a')).toEqual(['e-1', 'e-2']);
      expect(await pendingEntryIds(store, 'b')).toEqual(['e-2']);
      expect(await store.sinks.activate([{ name: 'b', type: 'stdout' }], T)).toEqual([]);
      await ingest(store, [entry('e-3')]);
      expect(await pendingEntryIds(store, 'a')).toEqual(['e-1', 'e-2']);
      expect(await pendingEntryIds(store, 'b')).toEqual(['e-2', 'e-3']);
      expect((await store.sinks.list()).map((s) => [s.name, s.type, s.active])).toEqual([
        ['a', 'file', false],
        ['b', 'stdout', true],
      ]);
    });

    it('lists pending deliveries after a position, up to a limit, and their exact payloads', async () => {
      const { store } = await openFresh();
      await ingest(store, [entry('e-1'), entry('e-2'), entry('e-3')]);
      const all = await store.outbox.pending('a', 0, 10);
      expect(all.map((d) => d.attempts)).toEqual([0, 0, 0]);
      expect(all[0]).toMatchObject({
        log: 'career',
        objectId: 'c-1',
        type: 'com.test.career.level_added',
        nextAttemptAt: 0,
        firstAttemptAt: null,
        ingestedAt: T,
      });
      const seqs = all.map((d) => d.seq);
      expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
      expect((await store.outbox.pending('a', seqs[0]!, 1)).map((d) => d.seq)).toEqual([seqs[1]]);
      const payloads = await store.outbox.payloads([seqs[2]!, 999_999_999]);
      const expected = buildCloudEvent(
        { tenant: store.tenant, log: 'career', objectId: 'c-1', entry: entry('e-3'), baseUrl: BASE_URL },
        EVENTS,
      );
      expect(payloads).toEqual(new Map([[seqs[2], JSON.stringify(expected)]]));
      expect(all[2]!.eventId).toBe(expected.id);
      expect(await store.outbox.payloads([])).toEqual(new Map());
    });

    it('a pending read that asks for the payloads carries them, as payloads() reads them', async () => {
      const { store } = await openFresh(['a']);
      await ingest(store, [entry('one'), entry('two')]);
      const seqs = (await store.outbox.pending('a', 0, 10)).map((d) => d.seq);
      const payloads = await store.outbox.payloads(seqs);
      const carried = await store.outbox.pending('a', 0, 10, true);
      expect(carried.map((d) => d.payload)).toEqual([...payloads.values()]);
      expect((await store.outbox.pending('a', 0, 10)).map((d) => d.payload)).toEqual([undefined, undefined]);
    });

    it('moves deliveries through delivered, retry, dead and filtered, and counts them', async () => {
      const { store } = await openFresh(['a', 'b']);
      await ingest(store, [entry('ok'), entry('retry'), entry('dead'), entry('skip'), entry('left')]);
      const seq = await seqOf(store);
      await store.outbox.markDelivered('a', [seq.ok!], T + 1);
      await store.outbox.scheduleRetry(
        'a',
        [{ seq: seq.retry!, error: 'timeout', status: 503, response: 'busy', nextAttemptAt: T + 60_000.5 }],
        T + 2,
      );
      await store.outbox.markDead('a', [{ seq: seq.dead!, error: 'rejected', status: 400, response: 'no' }], T + 3);
      await store.outbox.markFiltered('a', [seq.skip!], T + 4);
      // A delivery no longer pending is left alone: marking it again changes nothing.
      await store.outbox.markDelivered('a', [seq.dead!, seq.skip!], T + 5);
      await store.outbox.markDead('a', [{ seq: seq.ok!, error: 'late' }], T + 5);

      expect(await store.outbox.counts('a')).toEqual({
        pending: 2,
        delivered: 1,
        dead: 1,
        filtered: 1,
        oldestPendingIngestedAt: T,
      });
      expect(await store.outbox.counts('b')).toEqual({
        pending: 5,
        delivered: 0,
        dead: 0,
        filtered: 0,
        oldestPendingIngestedAt: T,
      });
      expect(await store.outbox.counts('nobody')).toEqual({
        pending: 0,
        delivered: 0,
        dead: 0,
        filtered: 0,
        oldestPendingIngestedAt: null,
      });
      const pending = await store.outbox.pending('a', 0, 10);
      expect(pending.map((d) => d.seq)).toEqual([seq.retry, seq.left]);
      expect(pending[0]).toMatchObject({ attempts: 1, nextAttemptAt: T + 60_000.5, firstAttemptAt: T + 2 });
      await store.outbox.scheduleRetry('a', [{ seq: seq.retry!, error: 'again', nextAttemptAt: T + 99 }], T + 6);
      expect((await store.outbox.pending('a', 0, 1))[0]).toMatchObject({ attempts: 2, firstAttemptAt: T + 2 });
    });

    it('records a failure whose error or response holds a NUL character (a binary body)', async () => {
      const { store } = await openFresh(['a']);
      await ingest(store, [entry('e-1'), entry('e-2')]);
      const seq = await seqOf(store);
      await store.outbox.scheduleRetry(
        'a',
        [{ seq: seq['e-1']!, error: 'bad\u0000', response: '\u0000\u0001', nextAttemptAt: T + 1 }],
        T,
      );
      await store.outbox.markDead('a', [{ seq: seq['e-2']!, error: 'x\u0000y', status: 500, response: 'a\u0000b' }], T);
      await store.watchedLogs.recordFailure('career', 'c-1', 'HTTP 500: \u0000', T);
      await store.sinks.recordState({
        sink: 'a',
        connected: false,
        pausedUntil: 0,
        consecutiveFailures: 1,
        lastError: 'refused\u0000',
        lastErrorAt: T,
        lastDeliveryAt: null,
      });
      const [dead] = await store.deadLetters.list();
      // SQLite keeps the NUL; PostgreSQL, whose text cannot hold it, stores U+FFFD in its place.
      expect(dead).toMatchObject({
        lastError: expect.stringMatching(/^x.y$/u),
        lastResponse: expect.stringMatching(/^a.b$/u),
      });
      expect((await store.outbox.counts('a')).pending).toBe(1);
    });

    it('prunes old journal entries that no sink still waits for, keeps pending ones, and says how far', async () => {
      const { store } = await openFresh(['a', 'b']);
      await ingest(store, [entry('both-done'), entry('one-done'), entry('dead'), entry('waiting')]);
      await ingest(store, [entry('recent')], { now: T + HOUR });
      const seq = await seqOf(store);
      await store.outbox.markDelivered('a', [seq['both-done']!, seq['one-done']!, seq.recent!], T);
      await store.outbox.markDelivered('b', [seq['both-done']!, seq.recent!], T);
      await store.outbox.markDead('a', [{ seq: seq.dead!, error: 'x' }], T);
      await store.outbox.markDead('b', [{ seq: seq.dead!, error: 'x' }], T);
      const head = await store.journal.head();
      expect(await store.journal.prunedThrough()).toBe(0);

      expect(await store.outbox.prune(T + 1)).toBe(2);
      expect(await entryIdsInJournal(store)).toEqual(['one-done', 'waiting', 'recent']);
      expect(await store.outbox.counts('b')).toMatchObject({ pending: 2, delivered: 1, dead: 0 });
      expect(await store.outbox.counts('a')).toMatchObject({ pending: 1, delivered: 2, dead: 0 });
      expect(await store.journal.prunedThrough()).toBe(seq.dead);
      expect(await store.journal.head()).toBe(head);
      expect(await store.journalSize()).toBe(3);

      // Nothing more to prune: the mark stays where it was.
      expect(await store.outbox.prune(T + 1)).toBe(0);
      expect(await store.journal.prunedThrough()).toBe(seq.dead);
      await store.outbox.markDelivered('a', [seq.waiting!], T);
      await store.outbox.markDelivered('b', [seq.waiting!, seq['one-done']!], T);
      expect(await store.outbox.prune(T + 1)).toBe(2);
      expect(await store.journal.prunedThrough()).toBe(seq.waiting);
      expect(await store.journal.head()).toBe(head);
    });

    it('prunes a journal larger than one batch to the end, and not at all once aborted', async () => {
      const { store } = await openFresh([]);
      const count = Math.floor(PRUNE_BATCH_EVENTS * 2.5);
      await ingest(
        store,
        Array.from({ length: count }, (_, i) => entry(`e-${i}`)),
      );
      const head = await store.journal.head();
      expect(await store.outbox.prune(T + 1, AbortSignal.abort())).toBe(0);
      expect(await store.journalSize()).toBe(count);
      expect(await store.outbox.prune(T + 1)).toBe(count);
      expect(await store.journalSize()).toBe(0);
      expect(await store.journal.prunedThrough()).toBe(head);
    });

    it('prunes the lowest positions first, so a prune stopped between batches records a position below every event left', async () => {
      const { store } = await openFresh([]);
      await ingest(
        store,
        Array.from({ length: PRUNE_BATCH_EVENTS + 10 }, (_, i) => entry(`e-${i}`)),
      );
      // Aborted once the first batch is under way: exactly one batch is deleted.
      let checks = 0;
      const afterOneBatch = {
        get aborted() {
          return checks++ > 0;
        },
      } as AbortSignal;
      expect(await store.outbox.prune(T + 1, afterOneBatch)).toBe(PRUNE_BATCH_EVENTS);
      const through = await store.journal.prunedThrough();
      const left = (await store.journal.page(0, 100)).events.map((e) => e.seq);
      expect(left).toHaveLength(10);
      expect(Math.min(...left)).toBeGreaterThan(through);
    });

    it('replays journal events for a sink with a fresh budget, by time range and log', async () => {
      const { store } = await openFresh(['a']);
      await ingest(store, [entry('e-1')], { now: T });
      await ingest(store, [entry('e-2')], { now: T + 10 });
      await ingest(store, [entry('s-1')], { log: 'skill', now: T + 20 });
      const seq = await seqOf(store);
      await store.outbox.markDelivered('a', [seq['e-1']!, seq['e-2']!], T + 30);
      await store.outbox.markDead('a', [{ seq: seq['s-1']!, error: 'x', status: 500 }], T + 30);

      expect(await store.outbox.enqueueFromJournal('a', { since: T + 10 }, T + 40)).toBe(2);
      const pending = await store.outbox.pending('a', 0, 10);
      expect(pending.map((d) => d.seq)).toEqual([seq['e-2'], seq['s-1']]);
      expect(pending.map((d) => [d.attempts, d.nextAttemptAt, d.firstAttemptAt])).toEqual([
        [0, 0, null],
        [0, 0, null],
      ]);
      expect(await store.deadLetters.list()).toEqual([]);
      expect(await store.outbox.enqueueFromJournal('a', { until: T + 10 }, T + 40)).toBe(1);
      expect(await store.outbox.enqueueFromJournal('a', { log: 'skill' }, T + 40)).toBe(1);
      // A sink that never had these events gets them.
      expect(await store.outbox.enqueueFromJournal('late', {}, T + 40)).toBe(3);
      expect(await pendingEntryIds(store, 'late')).toEqual(['e-1', 'e-2', 's-1']);
      expect(await store.outbox.enqueueFromJournal('late', { since: T + 100 }, T + 40)).toBe(0);
    });

    it('counts a replay that queued something in the re-queue count, which a running daemon watches', async () => {
      const { store } = await openFresh(['a']);
      await ingest(store, [entry('e-1')], { now: T });
      const before = await store.deadLetters.requeueCount();
      expect(await store.outbox.enqueueFromJournal('a', { since: T + 100 }, T + 40)).toBe(0);
      expect(await store.deadLetters.requeueCount()).toBe(before);
      expect(await store.outbox.enqueueFromJournal('a', {}, T + 40)).toBe(1);
      expect(await store.deadLetters.requeueCount()).toBe(before + 1);
    });

    it('counts what a replay would queue before queuing it, by time range, log and type glob', async () => {
      const { store } = await openFresh(['a']);
      await ingest(store, [entry('e-1'), entry('e-2', T - 60_000, 'level_removed')], { now: T });
      await ingest(store, [entry('s-1')], { log: 'skill', now: T + 20 });

      expect(await store.outbox.countFromJournal({})).toBe(3);
      expect(await store.outbox.countFromJournal({ type: 'com.test.*.level_added' })).toBe(2);
      expect(await store.outbox.countFromJournal({ type: 'com.test.career.level_?emoved' })).toBe(1);
      expect(await store.outbox.countFromJournal({ type: '*_removed', log: 'skill' })).toBe(0);
      expect(await store.outbox.countFromJournal({ since: T + 10 })).toBe(1);
      // Only `*` and `?` are wildcards, on both engines: SQL's own are plain characters.
      expect(await store.outbox.countFromJournal({ type: 'com.test.%' })).toBe(0);
      expect(await store.outbox.countFromJournal({ type: 'com.test.career.level_added' })).toBe(1);
      // Counting queues nothing; queuing takes exactly what was counted.
      expect(await pendingEntryIds(store, 'late')).toEqual([]);
      expect(await store.outbox.enqueueFromJournal('late', { type: 'com.test.*.level_added' }, T + 40)).toBe(2);
      expect(await pendingEntryIds(store, 'late')).toEqual(['e-1', 's-1']);
    });
    it('replays and counts a journal of many batches in full, from its first event left after a prune to its head', async () => {
      const { store, skipJournalPositions } = await openFresh(['a']);
      // Events on each side of a count window's edge and past a count window that holds none, with
      // gaps for the positions between: an edge, an empty window and the windows after it are where
      // a window loop goes wrong (one seq short of the edge, stopping or skipping at an empty
      // window), with a tenth of the events that filling the windows would take.
      const before = Math.floor(REQUEUE_BATCH_EVENTS * 1.5);
      const straddling = Math.floor(REQUEUE_BATCH_EVENTS * 1.5);
      const after = 100;
      const count = before + straddling + after;
      const ids = Array.from({ length: count }, (_, i) => `e-${i}`);
      await ingest(
        store,
        Array.from({ length: 100 }, (_, i) => entry(`old-${i}`)),
        { now: T - 10 },
      );
      await ingest(
        store,
        ids.slice(0, before).map((id) => entry(id)),
        { now: T },
      );
      await skipJournalPositions(COUNT_WINDOW_EVENTS - before - straddling / 2);
      await ingest(
        store,
        ids.slice(before, before + straddling).map((id) => entry(id)),
        { now: T },
      );
      await skipJournalPositions(2 * COUNT_WINDOW_EVENTS);
      await ingest(
        store,
        ids.slice(before + straddling).map((id) => entry(id)),
        { now: T },
      );
      // Seqs in ingestion order: the 100 old events', then e-0 onwards.
      const pending = (await store.outbox.pending('a', 0, count + 200)).map((d) => d.seq);
      expect(pending).toHaveLength(100 + count);
      const offsetFromFirst = (i: number): number => pending[100 + i]! - pending[100]!;
      const edge = before + straddling / 2;
      expect([offsetFromFirst(edge - 1), offsetFromFirst(edge)]).toEqual([
        COUNT_WINDOW_EVENTS - 1,
        COUNT_WINDOW_EVENTS,
      ]);
      expect(offsetFromFirst(before + straddling)).toBeGreaterThanOrEqual(3 * COUNT_WINDOW_EVENTS);
      await store.outbox.markDelivered('a', pending, T + 1);
      expect(await store.outbox.prune(T)).toBe(100);

      expect(await store.outbox.countFromJournal({})).toBe(count);
      expect(await store.outbox.countFromJournal({ log: 'skill' })).toBe(0);
      expect(await store.outbox.enqueueFromJournal('a', {}, T + 2)).toBe(count);
      expect((await store.outbox.counts('a')).pending).toBe(count);
      // A second press queues each event once more, never a second delivery row.
      expect(await store.outbox.enqueueFromJournal('a', {}, T + 3)).toBe(count);
      expect((await store.outbox.counts('a')).pending).toBe(count);
    });
  });

  describe('dead letters', () => {
    it('puts back in line the dead letters of a sink holding many batches of them, each batch counted', async () => {
      const { store } = await openFresh(['a', 'b']);
      const count = Math.floor(REQUEUE_BATCH_EVENTS * 2.5);
      await ingest(
        store,
        Array.from({ length: count }, (_, i) => entry(`e-${i}`)),
      );
      const seqs = (await store.outbox.pending('a', 0, count)).map((d) => d.seq);
      await store.outbox.markDead(
        'a',
        seqs.map((seq) => ({ seq, error: 'gone' })),
        T + 1,
      );
      await store.outbox.markDead(
        'b',
        seqs.slice(0, 10).map((seq) => ({ seq, error: 'gone' })),
        T + 1,
      );

      expect(await store.deadLetters.requeueSink('a', T + 2)).toBe(count);
      expect(await store.deadLetters.requeueCount()).toBe(3);
      expect((await store.outbox.counts('a')).pending).toBe(count);
      expect((await store.deadLetters.list()).map((d) => d.sink)).toEqual(Array(10).fill('b'));
      expect(await store.deadLetters.requeueSink('a', T + 3)).toBe(0);
      expect(await store.deadLetters.requeueCount()).toBe(3);
    });

    it('puts nothing back in line when the re-queue cannot be counted: the re-queue and its count are one write', async () => {
      const { store, refuseRequeueCounts } = await openFresh(['a', 'b']);
      await ingest(store, [entry('e-1'), entry('e-2')]);
      const seq = await seqOf(store);
      await store.outbox.markDead('a', [{ seq: seq['e-1']!, error: 'gone' }], T + 1);
      await store.outbox.markDead('b', [{ seq: seq['e-2']!, error: 'gone' }], T + 1);
      const dead = await store.deadLetters.list();
      const pendingOfA = await pendingEntryIds(store, 'a');
      await refuseRequeueCounts();

      // A daemon watching the count would never learn of a re-queue that was not counted.
      await expect(store.deadLetters.requeueEvent(dead[0]!.eventId, 'a', T + 2)).rejects.toThrow();
      await expect(store.deadLetters.requeueSink('b', T + 2)).rejects.toThrow();
      await expect(store.outbox.enqueueFromJournal('a', {}, T + 2)).rejects.toThrow();
      expect(await store.deadLetters.list()).toEqual(dead);
      expect(await pendingEntryIds(store, 'a')).toEqual(pendingOfA);
      expect(await store.deadLetters.requeueCount()).toBe(0);
    });

    it('lists dead deliveries with the last answer, and puts them back in line', async () => {
      const { store } = await openFresh(['a', 'b']);
      await ingest(store, [entry('e-1'), entry('e-2')]);
      const seq = await seqOf(store);
      await store.outbox.scheduleRetry('a', [{ seq: seq['e-1']!, error: 'first', nextAttemptAt: T + 1 }], T + 1);
      await store.outbox.markDead('a', [{ seq: seq['e-1']!, error: 'gone', status: 410, response: 'bye' }], T + 2);
      await store.outbox.markDead('b', [{ seq: seq['e-1']!, error: 'bad' }], T + 3);
      await store.outbox.markDead('b', [{ seq: seq['e-2']!, error: 'bad' }], T + 3);

      const all = await store.deadLetters.list();
      expect(all.map((d) => [d.sink, d.seq])).toEqual([
        ['a', seq['e-1']],
        ['b', seq['e-1']],
        ['b', seq['e-2']],
      ]);
      expect(all[0]).toMatchObject({
        log: 'career',
        objectId: 'c-1',
        type: 'com.test.career.level_added',
        attempts: 2,
        lastError: 'gone',
        lastStatus: 410,
        lastResponse: 'bye',
        firstAttemptAt: T + 1,
        deadAt: T + 2,
      });
      expect(all[1]).toMatchObject({ lastStatus: null, lastResponse: null, attempts: 1 });
      const e1 = all[0]!.eventId;
      expect((await store.deadLetters.list({ eventId: e1 })).map((d) => d.sink)).toEqual(['a', 'b']);
      expect((await store.deadLetters.list({ sink: 'b', limit: 1 })).map((d) => d.seq)).toEqual([seq['e-1']]);

      expect(await store.deadLetters.requeueCount()).toBe(0);
      expect(await store.deadLetters.requeueEvent(e1, 'b', T + 4)).toBe(1);
      expect(await store.deadLetters.requeueCount()).toBe(1);
      expect(await store.deadLetters.requeueEvent(e1, 'b', T + 4)).toBe(0);
      expect(await store.deadLetters.requeueCount()).toBe(1);
      expect(await store.deadLetters.requeueEvent('no-such-event', undefined, T + 4)).toBe(0);
      expect(await store.deadLetters.requeueSink('b', T + 5)).toBe(1);
      expect(await store.deadLetters.requeueEvent(e1, undefined, T + 6)).toBe(1);
      expect(await store.deadLetters.requeueCount()).toBe(3);
      expect(await store.deadLetters.list()).toEqual([]);
      expect((await store.outbox.pending('a', 0, 10))[0]).toMatchObject({
        seq: seq['e-1'],
        attempts: 0,
        nextAttemptAt: 0,
        firstAttemptAt: null,
      });
      expect(await store.outbox.counts('b')).toMatchObject({ pending: 2, dead: 0 });
    });
  });
}
