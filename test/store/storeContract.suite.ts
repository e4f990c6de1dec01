import { afterEach, describe, expect, it } from 'vitest';
import type { ActivityEntry } from '../../src/api/activityEntry.js';
import type { QuarantinedEntry } from '../../src/api/quarantinedEntry.js';
import { buildCloudEvent, type EventsConfig } from '../../src/events/cloudEvent.js';
import type { LogKind } from '../../src/logs.js';
import type { ChangefeedStore } from '../../src/store/changefeedStore.js';
import { MAX_SCAN_POSITIONS, type IngestRequest } from '../../src/store/storeRecords.js';

/** A fresh, empty store of the implementation under test, and how to open it again or throw it away. */
export interface StoreUnderTest {
  store: ChangefeedStore;
  /** Closes the store and opens the same one again. */
  reopen(): Promise<ChangefeedStore>;
  cleanup(): Promise<void>;
}

export const T = Date.UTC(2026, 4, 1, 12, 0, 0);
export const HOUR = 3_600_000;
const EVENTS: EventsConfig = { typePrefix: 'com.test', nullEventName: 'unspecified' };
const BASE_URL = 'https://svc.example';

export const entry = (id: string, performedAt: number | null = T - 60_000, event = 'level_added'): ActivityEntry => ({
  id,
  event,
  performedAt: performedAt === null ? null : new Date(performedAt).toISOString(),
});

export function ingest(store: ChangefeedStore, entries: ActivityEntry[], over: Partial<IngestRequest> = {}) {
  const log: LogKind = over.log ?? 'career';
  const objectId = over.objectId ?? 'c-1';
  return store.ingest({
    log,
    objectId,
    entries,
    windowEnd: T,
    now: T,
    toEvent: (e) => buildCloudEvent({ log, objectId, entry: e, baseUrl: BASE_URL }, EVENTS),
    ...over,
  });
}

/** Entry ids of the whole journal, in journal order, read back from the stored CloudEvents. */
export async function entryIdsInJournal(store: ChangefeedStore): Promise<string[]> {
  const page = await store.journal.page(0, 100_000);
  return page.events.map((e) => (JSON.parse(e.payload) as { entryid: string }).entryid);
}

/** Entry ids of the pending deliveries of `sink`, in seq order, with their seqs. */
async function pendingBySink(store: ChangefeedStore, sink: string): Promise<{ ids: string[]; seqs: number[] }> {
  const seqs = (await store.outbox.pending(sink, 0, 1000)).map((d) => d.seq);
  const payloads = await store.outbox.payloads(seqs);
  return { ids: seqs.map((seq) => (JSON.parse(payloads.get(seq)!) as { entryid: string }).entryid), seqs };
}
const pendingEntryIds = async (store: ChangefeedStore, sink: string) => (await pendingBySink(store, sink)).ids;

/** The seq of each entry id in the journal. */
async function seqOf(store: ChangefeedStore): Promise<Record<string, number>> {
  const page = await store.journal.page(0, 100_000);
  return Object.fromEntries(
    page.events.map((e) => [(JSON.parse(e.payload) as { entryid: string }).entryid, e.seq] as const),
  );
}

const isSeen = async (store: ChangefeedStore, id: string, log: LogKind = 'career', objectId = 'c-1') =>
  (await store.seen.seenAmong(log, objectId, [id])).has(id);

const quarantined = (raw: string, entryId?: string): QuarantinedEntry => ({
  raw,
  rawBytes: Buffer.byteLength(raw),
  entryId,
  reason: 'performedAt does not parse',
  requestId: 'req-1',
});

/**
 * The store contract (src/store/changefeedStore.ts) as behaviour, run against every
 * implementation: test/store/sqliteStore.test.ts and test/store/postgresStore.test.ts.
 * `factory` gives a fresh, empty store per test.
 */
export function defineStoreContractTests(factory: () => Promise<StoreUnderTest>): void {
  const opened: StoreUnderTest[] = [];
  afterEach(async () => {
    for (const s of opened.splice(0).reverse()) await s.cleanup();
  });

  /** A fresh store with `sinks` active and the career log c-1 watched. */
  async function openFresh(sinks: string[] = ['a']): Promise<StoreUnderTest & { store: ChangefeedStore }> {
    const underTest = await factory();
    opened.push(underTest);
    const { store } = underTest;
    await store.sinks.activate(
      sinks.map((name) => ({ name, type: 'file' })),
      T,
    );
    await store.watchedLogs.register({
      log: 'career',
      objectId: 'c-1',
      origin: 'config',
      coverageStart: T - HOUR,
      now: T,
    });
    return underTest;
  }

  describe('ingest', () => {
    it('commits the entries, one delivery per active sink and the cursor together', async () => {
      const { store } = await openFresh(['a', 'b']);
      expect(await ingest(store, [entry('e-1'), entry('e-2')], { windowEnd: T + 5_000 })).toMatchObject({
        emitted: 2,
        duplicates: 0,
      });
      expect(await entryIdsInJournal(store)).toEqual(['e-1', 'e-2']);
      expect(await pendingEntryIds(store, 'a')).toEqual(['e-1', 'e-2']);
      expect(await pendingEntryIds(store, 'b')).toEqual(['e-1', 'e-2']);
      expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({
        windowEnd: T + 5_000,
        entriesIngested: 2,
        lastSuccessAt: T,
      });
      expect(await isSeen(store, 'e-2')).toBe(true);
      expect(await store.journalSize()).toBe(2);
    });

    it('changes nothing when building an event fails halfway: no entry, no delivery, no cursor move', async () => {
      const { store } = await openFresh();
      const before = await store.watchedLogs.get('career', 'c-1');
      const headBefore = await store.journal.head();
      await expect(
        ingest(store, [entry('e-1'), entry('e-2'), entry('e-3')], {
          windowEnd: T + 5_000,
          silentEntries: [entry('old-1')],
          quarantined: [quarantined('{"id":"q"}')],
          toEvent: (e) => {
            if (e.id === 'e-2') throw new Error('cannot build');
            return buildCloudEvent({ log: 'career', objectId: 'c-1', entry: e, baseUrl: BASE_URL }, EVENTS);
          },
        }),
      ).rejects.toThrow('cannot build');
      expect(await store.journalSize()).toBe(0);
      expect(await store.outbox.counts('a')).toMatchObject({ pending: 0, delivered: 0, dead: 0, filtered: 0 });
      expect(await isSeen(store, 'e-1')).toBe(false);
      expect(await isSeen(store, 'old-1')).toBe(false);
      expect(await store.quarantine.count()).toBe(0);
      expect(await store.watchedLogs.get('career', 'c-1')).toEqual(before);
      expect(await store.journal.head()).toBe(headBefore);
      // The same read succeeds afterwards, as if the failed one never happened.
      expect(await ingest(store, [entry('e-1'), entry('e-2'), entry('e-3')])).toMatchObject({
        emitted: 3,
        duplicates: 0,
      });
      expect(await entryIdsInJournal(store)).toEqual(['e-1', 'e-2', 'e-3']);
    });

    it('counts entries read again (overlapping windows, or twice in one page) as duplicates', async () => {
      const { store } = await openFresh();
      await ingest(store, [entry('e-1'), entry('e-2')]);
      expect(await ingest(store, [entry('e-2'), entry('e-3')])).toMatchObject({ emitted: 1, duplicates: 1 });
      expect(await ingest(store, [entry('e-4'), entry('e-4')])).toMatchObject({ emitted: 1, duplicates: 1 });
      expect(await entryIdsInJournal(store)).toEqual(['e-1', 'e-2', 'e-3', 'e-4']);
      expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({ entriesIngested: 4 });
    });

    it('reports the performedAt of emitted entries only, not of duplicates or undated ones', async () => {
      const { store } = await openFresh();
      await ingest(store, [entry('e-1', T - 3_000)]);
      const result = await ingest(store, [entry('e-1', T - 3_000), entry('e-2', T - 2_000), entry('e-3', null)]);
      expect(result).toEqual({ emitted: 2, duplicates: 1, emittedPerformedAt: [T - 2_000], quarantined: 0 });
    });

    it('keeps entry ids apart per log and object', async () => {
      const { store } = await openFresh();
      await ingest(store, [entry('e-1')]);
      expect(await ingest(store, [entry('e-1')], { objectId: 'c-2' })).toMatchObject({ emitted: 1, duplicates: 0 });
      expect(await ingest(store, [entry('e-1')], { log: 'skill', objectId: 'c-1' })).toMatchObject({
        emitted: 1,
        duplicates: 0,
      });
      expect(await store.seen.seenAmong('career', 'c-2', ['e-1', 'e-2'])).toEqual(new Set(['e-1']));
    });

    it('records silent entries as seen without emitting them', async () => {
      const { store } = await openFresh();
      expect(
        await ingest(store, [entry('new-1'), entry('old-1')], { silentEntries: [entry('old-1'), entry('old-2')] }),
      ).toMatchObject({ emitted: 1, duplicates: 1 });
      expect(await entryIdsInJournal(store)).toEqual(['new-1']);
      expect(await isSeen(store, 'old-1')).toBe(true);
      expect(await ingest(store, [entry('old-2')])).toMatchObject({ emitted: 0, duplicates: 1 });
    });

    it('forgets seen ids older than pruneSeenBefore, aging undated ones by when they were seen', async () => {
      const { store } = await openFresh();
      await ingest(store, [entry('old', T - 10 * HOUR), entry('recent', T - 60_000), entry('undated', null)], {
        pruneSeenBefore: T - HOUR,
      });
      expect(await store.seen.seenAmong('career', 'c-1', ['old', 'recent', 'undated'])).toEqual(
        new Set(['recent', 'undated']),
      );
      await ingest(store, [], { now: T + 3 * HOUR, pruneSeenBefore: T + HOUR });
      expect(await store.seen.seenAmong('career', 'c-1', ['recent', 'undated'])).toEqual(new Set());
    });

    it('prunes only the log it ingests', async () => {
      const { store } = await openFresh();
      await ingest(store, [entry('x', T - 10 * HOUR)], { objectId: 'c-2' });
      await ingest(store, [], { pruneSeenBefore: T });
      expect(await isSeen(store, 'x', 'career', 'c-2')).toBe(true);
    });

    it('does not emit an entry twice once its seen id is pruned while its event is still in the journal', async () => {
      const { store } = await openFresh();
      await ingest(store, [entry('e-1', T - 10 * HOUR)], { pruneSeenBefore: T - HOUR });
      expect(await isSeen(store, 'e-1')).toBe(false);
      expect(await ingest(store, [entry('e-1', T - 10 * HOUR)])).toMatchObject({ emitted: 0, duplicates: 1 });
      expect(await entryIdsInJournal(store)).toEqual(['e-1']);
    });

    it('quarantines entries in the same transaction, each raw entry once, newest first', async () => {
      const { store } = await openFresh();
      const bad = quarantined('{"id":"q-1","performedAt":"yesterday"}', 'q-1');
      expect(await ingest(store, [entry('e-1')], { quarantined: [bad, quarantined('{"x":1}')] })).toMatchObject({
        emitted: 1,
        quarantined: 2,
      });
      expect(await ingest(store, [], { quarantined: [bad], now: T + 1 })).toMatchObject({ quarantined: 0 });
      await ingest(store, [], { log: 'skill', quarantined: [quarantined('{"y":2}')], now: T + 2 });
      expect(await store.quarantine.count()).toBe(3);
      const all = await store.quarantine.list();
      expect(all.map((q) => q.raw)).toEqual(['{"y":2}', expect.any(String), expect.any(String)]);
      expect(await store.quarantine.list({ log: 'skill' })).toEqual([
        {
          log: 'skill',
          objectId: 'c-1',
          entryId: null,
          reason: 'performedAt does not parse',
          raw: '{"y":2}',
          rawBytes: 7,
          requestId: 'req-1',
          firstSeenAt: T + 2,
        },
      ]);
      expect(await store.quarantine.list({ limit: 1 })).toHaveLength(1);
    });
  });

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
        { log: 'career', objectId: 'c-1', entry: entry('e-3'), baseUrl: BASE_URL },
        EVENTS,
      );
      expect(payloads).toEqual(new Map([[seqs[2], JSON.stringify(expected)]]));
      expect(all[2]!.eventId).toBe(expected.id);
      expect(await store.outbox.payloads([])).toEqual(new Map());
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
  });

  describe('dead letters', () => {
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

  describe('watched logs', () => {
    it('registers a log once and keeps its cursor, failures, status and sort order', async () => {
      const { store } = await openFresh();
      expect(
        await store.watchedLogs.register({
          log: 'career',
          objectId: 'c-1',
          origin: 'discovered',
          coverageStart: T,
          now: T + 1,
        }),
      ).toBe(false);
      expect(
        await store.watchedLogs.register({
          log: 'skill',
          objectId: 's-1',
          origin: 'appeared',
          coverageStart: T,
          now: T,
        }),
      ).toBe(true);
      expect(
        await store.watchedLogs.register({
          log: 'identityProvider',
          objectId: '',
          origin: 'config',
          coverageStart: T,
          now: T,
        }),
      ).toBe(true);
      expect(await store.watchedLogs.get('career', 'c-1')).toEqual({
        log: 'career',
        objectId: 'c-1',
        origin: 'config',
        status: 'active',
        statusReason: null,
        coverageStart: T - HOUR,
        windowEnd: T - HOUR,
        sortOrder: null,
        lastPollAt: null,
        lastSuccessAt: null,
        lastError: null,
        consecutiveFailures: 0,
        nextPollAt: T,
        entriesIngested: 0,
        createdAt: T,
      });
      // A skill log has no windows: its cursor starts empty.
      expect(await store.watchedLogs.get('skill', 's-1')).toMatchObject({ windowEnd: null, coverageStart: T });
      await store.watchedLogs.recordFailure('career', 'c-1', 'HTTP 500', T + 5);
      await store.watchedLogs.recordFailure('career', 'c-1', 'HTTP 502', T + 6);
      await store.watchedLogs.setStatus('skill', 's-1', 'gone', '404');
      await store.watchedLogs.setSortOrder('skill', 's-1', 'oldest-first');
      expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({
        lastPollAt: T + 6,
        lastError: 'HTTP 502',
        consecutiveFailures: 2,
      });
      expect(await store.watchedLogs.get('skill', 's-1')).toMatchObject({
        status: 'gone',
        statusReason: '404',
        sortOrder: 'oldest-first',
      });
      await ingest(store, [entry('e-1')], { windowEnd: T + 9, now: T + 10 });
      expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({
        windowEnd: T + 9,
        lastError: null,
        consecutiveFailures: 0,
        lastSuccessAt: T + 10,
      });
      expect((await store.watchedLogs.list()).map((w) => [w.log, w.objectId])).toEqual([
        ['career', 'c-1'],
        ['identityProvider', ''],
        ['skill', 's-1'],
      ]);
      expect(await store.watchedLogs.get('career', 'missing')).toBeUndefined();
    });
  });

  describe('sink state, rates and meta', () => {
    it('records the state of each sink and keeps the last delivery time when none is given', async () => {
      const { store } = await openFresh(['a', 'b']);
      const listed = await store.sinks.list();
      expect(listed[0]).toEqual({
        name: 'a',
        type: 'file',
        active: true,
        registeredAt: T,
        connected: false,
        pausedUntil: 0,
        consecutiveFailures: 0,
        lastError: null,
        lastErrorAt: null,
        lastDeliveryAt: null,
        circuit: 'closed',
        disabledReason: null,
      });
      const base = { sink: 'a', pausedUntil: 0, consecutiveFailures: 0, lastError: null, lastErrorAt: null };
      await store.sinks.recordState({ ...base, connected: true, lastDeliveryAt: T + 1 });
      await store.sinks.recordState({
        ...base,
        connected: false,
        pausedUntil: T + 60_000,
        consecutiveFailures: 3,
        lastError: 'refused',
        lastErrorAt: T + 2,
        lastDeliveryAt: null,
        circuit: 'open',
        disabledReason: 'gone',
      });
      expect((await store.sinks.list())[0]).toMatchObject({
        connected: false,
        pausedUntil: T + 60_000,
        consecutiveFailures: 3,
        lastError: 'refused',
        lastErrorAt: T + 2,
        lastDeliveryAt: T + 1,
        circuit: 'open',
        disabledReason: 'gone',
      });
      await store.sinks.recordState({ ...base, connected: true, lastDeliveryAt: null });
      expect((await store.sinks.list())[0]).toMatchObject({ connected: true, circuit: 'closed', disabledReason: null });
    });

    it('saves and lists learned rates, one row per log', async () => {
      const { store } = await openFresh();
      const row = {
        log: 'career' as const,
        objectId: 'c-1',
        events: 7.5,
        hours: 20.25,
        sessions: 3.125,
        lastEventAt: T - 1,
        updatedAt: T,
        pollCost: 1.5,
        plannedRate: 0.333,
        nextPollAt: T + 1_234.5,
      };
      await store.rates.save(row);
      await store.rates.save({ ...row, objectId: 'a-0', plannedRate: null, nextPollAt: null, lastEventAt: null });
      await store.rates.save({ ...row, events: 8 });
      expect(await store.rates.list()).toEqual([
        { ...row, objectId: 'a-0', plannedRate: null, nextPollAt: null, lastEventAt: null },
        { ...row, events: 8 },
      ]);
    });

    it('keeps named values', async () => {
      const { store } = await openFresh();
      expect(await store.getMeta('discovery.completedAt')).toBeUndefined();
      await store.setMeta('discovery.completedAt', '123');
      await store.setMeta('discovery.completedAt', '456');
      expect(await store.getMeta('discovery.completedAt')).toBe('456');
    });

    it('keeps everything across a reopen', async () => {
      const underTest = await openFresh();
      await ingest(underTest.store, [entry('e-1')]);
      await underTest.store.setMeta('discovery.completedAt', '123');
      const reopened = await underTest.reopen();
      expect(await entryIdsInJournal(reopened)).toEqual(['e-1']);
      expect(await reopened.getMeta('discovery.completedAt')).toBe('123');
      expect(await ingest(reopened, [entry('e-1')])).toMatchObject({ emitted: 0, duplicates: 1 });
      expect(await pendingEntryIds(reopened, 'a')).toEqual(['e-1']);
    });
  });

  describe('journal', () => {
    /** A store holding `events` entries of c-1 with the given logs and event names, and no sink. */
    async function storeWith(
      events: number,
      logOf: (i: number) => LogKind,
      eventOf: (i: number) => string = () => 'level_added',
    ) {
      const { store } = await openFresh([]);
      for (const log of ['career', 'skill'] as const) {
        const entries = [];
        for (let i = 1; i <= events; i++) if (logOf(i) === log) entries.push(entry(`e${i}`, T - i, eventOf(i)));
        if (entries.length > 0) await ingest(store, entries, { log });
      }
      const first = (await store.journal.page(0, 1)).events[0]?.seq ?? 0;
      return { store, first };
    }

    it('starts empty at head 0', async () => {
      const { store } = await openFresh();
      expect(await store.journal.head()).toBe(0);
      expect(await store.journal.page(0, 10)).toEqual({ events: [], next: 0, reachedHead: true });
    });

    it('looks at no more than MAX_SCAN_POSITIONS positions: a rare filter is searched in bounded stretches', async () => {
      const total = 2 * MAX_SCAN_POSITIONS + 500;
      const { store, first } = await storeWith(total, (i) => (i === total ? 'skill' : 'career'));
      const base = first - 1;
      const head = await store.journal.head();
      expect(head).toBe(base + total);
      const one = await store.journal.page(base, 100, { log: 'skill' });
      expect(one).toEqual({ events: [], next: base + MAX_SCAN_POSITIONS, reachedHead: false });
      const two = await store.journal.page(one.next, 100, { log: 'skill' });
      expect(two).toEqual({ events: [], next: base + 2 * MAX_SCAN_POSITIONS, reachedHead: false });
      const three = await store.journal.page(two.next, 100, { log: 'skill' });
      expect(three.events.map((e) => e.seq)).toEqual([head]);
      expect(three).toMatchObject({ next: head, reachedHead: true });
    });

    it('a full page ends at its last event, wherever the head is', async () => {
      const { store, first } = await storeWith(50, () => 'career');
      const base = first - 1;
      const page = await store.journal.page(base + 10, 5);
      expect(page.events.map((e) => e.seq)).toEqual([11, 12, 13, 14, 15].map((n) => base + n));
      expect(page).toMatchObject({ next: base + 15, reachedHead: false });
      expect(await store.journal.page(base + 45, 100)).toMatchObject({ next: base + 50, reachedHead: true });
      expect(await store.journal.page(base + 50, 100)).toEqual({ events: [], next: base + 50, reachedHead: true });
    });

    it('filters by log and by a type glob where only * and ? are wildcards', async () => {
      const names = ['level_added', 'levelXadded', 'level%added', 'level_removed', 'Level_added'];
      const { store } = await storeWith(
        5,
        () => 'career',
        (i) => names[i - 1]!,
      );
      await ingest(store, [entry('s-1')], { log: 'skill' });
      const typesOf = async (type: string) =>
        (await store.journal.page(0, 100, { type })).events.map((e) =>
          (JSON.parse(e.payload) as { type: string }).type.split('.').slice(2).join('.'),
        );
      expect(await typesOf('com.test.career.level_added')).toEqual(['career.level_added']);
      expect(await typesOf('*.level?added')).toEqual([
        'career.level_added',
        'career.levelXadded',
        'career.level%added',
        'skill.level_added',
      ]);
      expect(await typesOf('*level%added')).toEqual(['career.level%added']);
      expect(await typesOf('com.test.career.*')).toHaveLength(5);
      expect(await typesOf('com.test.*_removed')).toEqual(['career.level_removed']);
      expect(await typesOf('*.level_*')).toEqual(['career.level_added', 'career.level_removed', 'skill.level_added']);
      expect(await typesOf('com.test.career.level')).toEqual([]);
      const skill = await store.journal.page(0, 100, { log: 'skill', type: '*added' });
      expect(skill.events).toHaveLength(1);
      expect(skill.reachedHead).toBe(true);
    });

    it('keeps its head when the events at the head are pruned', async () => {
      const { store } = await openFresh(['a']);
      await ingest(store, [entry('e-1'), entry('e-2')]);
      const head = await store.journal.head();
      const seq = await seqOf(store);
      await store.outbox.markDelivered('a', [seq['e-1']!, seq['e-2']!], T);
      expect(await store.outbox.prune(T + 1)).toBe(2);
      expect(await store.journal.head()).toBe(head);
      expect(await store.journal.prunedThrough()).toBe(head);
      expect(await store.journal.page(0, 10)).toEqual({ events: [], next: head, reachedHead: true });
      await ingest(store, [entry('e-3')]);
      expect((await store.journal.page(head, 10)).events.map((e) => e.seq)[0]).toBeGreaterThan(head);
    });
  });
}
