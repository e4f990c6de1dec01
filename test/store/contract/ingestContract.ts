import { describe, expect, it } from 'vitest';
import { buildCloudEvent } from '../../../src/events/cloudEvent.js';
import {
  BASE_URL,
  entry,
  entryIdsInJournal,
  EVENTS,
  HOUR,
  ingest,
  isSeen,
  pendingEntryIds,
  quarantined,
  T,
  type OpenFresh,
} from './storeFixtures.js';

/** The single write path from polling: one transaction, deduplicated by entry id. */
export function defineIngestContract(openFresh: OpenFresh): void {
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
            return buildCloudEvent(
              { tenant: 'default', log: 'career', objectId: 'c-1', entry: e, baseUrl: BASE_URL },
              EVENTS,
            );
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

    it('takes an entry id and an event name holding a NUL character, and still deduplicates them', async () => {
      const { store } = await openFresh();
      const odd = entry('e\u0000-1', T - 1_000, 'level\u0000added');
      expect(await ingest(store, [odd, entry('e-2')])).toMatchObject({ emitted: 2, duplicates: 0 });
      expect(await ingest(store, [odd])).toMatchObject({ emitted: 0, duplicates: 1 });
      expect(await store.seen.seenAmong('career', 'c-1', ['e\u0000-1', 'e-1'])).toEqual(new Set(['e\u0000-1']));
      // The payload is JSON: the NUL is escaped in it and comes back exactly.
      expect(await entryIdsInJournal(store)).toEqual(['e\u0000-1', 'e-2']);
    });

    it('keeps an id holding a NUL apart from the same id holding U+FFFD, within a read and across reads', async () => {
      const { store } = await openFresh();
      expect(await ingest(store, [entry('e\u0000-1'), entry('e\uFFFD-1')])).toMatchObject({
        emitted: 2,
        duplicates: 0,
      });
      expect(await ingest(store, [entry('e\u0000-2')])).toMatchObject({ emitted: 1, duplicates: 0 });
      expect(await ingest(store, [entry('e\uFFFD-2')])).toMatchObject({ emitted: 1, duplicates: 0 });
      expect(await store.seen.seenAmong('career', 'c-1', ['e\uFFFD-1', 'e\u0000-2', 'e\uFFFD0-2'])).toEqual(
        new Set(['e\uFFFD-1', 'e\u0000-2']),
      );
    });

    it('counts an entry whose seen id was pruned as a duplicate each time a read repeats it, and records it again', async () => {
      const { store } = await openFresh();
      await ingest(store, [entry('e-1', T - 10 * HOUR)], { pruneSeenBefore: T - HOUR });
      const again = [entry('e-1', T - 10 * HOUR), entry('e-1', T - 10 * HOUR)];
      expect(await ingest(store, again)).toEqual({ emitted: 0, duplicates: 2, emittedPerformedAt: [], quarantined: 0 });
      expect(await isSeen(store, 'e-1')).toBe(true);
      expect(await entryIdsInJournal(store)).toEqual(['e-1']);
    });

    it("a read of nothing still moves the cursor and forgets its own log's old seen ids, no other log's", async () => {
      const { store } = await openFresh();
      await ingest(store, [entry('e-old', T - 10 * HOUR)]);
      await ingest(store, [entry('e-old', T - 10 * HOUR)], { objectId: 'c-9' });
      await ingest(store, [], { windowEnd: T + 5_000, now: T + 5_000, pruneSeenBefore: T - HOUR });
      expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({
        windowEnd: T + 5_000,
        lastSuccessAt: T + 5_000,
      });
      expect(await isSeen(store, 'e-old')).toBe(false);
      expect(await store.seen.seenAmong('career', 'c-9', ['e-old'])).toEqual(new Set(['e-old']));
    });

    it('emits nothing for silent entries seen before or repeated, and counts none of them', async () => {
      const { store } = await openFresh();
      await ingest(store, [entry('e-1')]);
      const silent = [entry('e-1'), entry('s-1'), entry('s-1')];
      expect(await ingest(store, [entry('e-2')], { silentEntries: silent })).toEqual({
        emitted: 1,
        duplicates: 0,
        emittedPerformedAt: [T - 60_000],
        quarantined: 0,
      });
      expect(await entryIdsInJournal(store)).toEqual(['e-1', 'e-2']);
      expect(await isSeen(store, 's-1')).toBe(true);
    });

    it('quarantines a raw entry sent twice in one read once, beside a valid entry of the same id', async () => {
      const { store } = await openFresh();
      const bad = quarantined('{"id":"e-1","performedAt":"yesterday"}', 'e-1');
      expect(await ingest(store, [entry('e-1')], { quarantined: [bad, bad] })).toMatchObject({
        emitted: 1,
        quarantined: 1,
      });
      expect(await store.quarantine.count()).toBe(1);
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
}
