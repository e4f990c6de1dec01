import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { ActivityEntry } from '../../src/api/activityEntry.js';
import { buildCloudEvent } from '../../src/events/cloudEvent.js';
import type { LogKind } from '../../src/logs.js';
import { ChangefeedStore, type IngestRequest } from '../../src/store/changefeedStore.js';
import { StoreError } from '../../src/store/database.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { RateEstimates } from '../../src/store/rateEstimates.js';
import { makeTempDir } from '../support/tempDir.js';
import { BASE_URL, EVENTS } from './scriptedSink.js';

const T = Date.UTC(2026, 4, 1, 12, 0, 0);
const HOUR = 3_600_000;

function openFresh(sinks: string[] = ['a']) {
  const file = join(makeTempDir(), 's.sqlite');
  const store = ChangefeedStore.open(file);
  store.sinks.activate(
    sinks.map((name) => ({ name, type: 'file' })),
    T,
  );
  store.watchedLogs.register({ log: 'career', objectId: 'c-1', origin: 'config', coverageStart: T - HOUR, now: T });
  return { file, store };
}

const entry = (id: string, performedAt: number | null = T - 60_000): ActivityEntry => ({
  id,
  event: 'level_added',
  performedAt: performedAt === null ? null : new Date(performedAt).toISOString(),
});

function ingest(store: ChangefeedStore, entries: ActivityEntry[], over: Partial<IngestRequest> = {}) {
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

const count = (store: ChangefeedStore, sql: string): number => (store.db.prepare(sql).get() as { n: number }).n;
const entryIdsInJournal = (store: ChangefeedStore): string[] =>
  store.db
    .prepare<[], { payload: string }>('SELECT payload FROM events ORDER BY seq')
    .all()
    .map((r) => (JSON.parse(r.payload) as { entryid: string }).entryid);
/** Entry ids of the pending deliveries of `sink`, in seq order, read back from their stored CloudEvents. */
function pendingEntryIds(store: ChangefeedStore, sink: string): string[] {
  const seqs = store.outbox.pending(sink, 0, 100).map((d) => d.seq);
  const payloads = store.outbox.payloads(seqs);
  return seqs.map((seq) => (JSON.parse(payloads.get(seq)!) as { entryid: string }).entryid);
}

describe('ChangefeedStore.ingest', () => {
  it('commits the entries, one delivery per active sink and the cursor together', () => {
    const { store } = openFresh(['a', 'b']);
    expect(ingest(store, [entry('e-1'), entry('e-2')], { windowEnd: T + 5_000 })).toMatchObject({
      emitted: 2,
      duplicates: 0,
    });
    expect(entryIdsInJournal(store)).toEqual(['e-1', 'e-2']);
    expect(pendingEntryIds(store, 'a')).toEqual(['e-1', 'e-2']);
    expect(pendingEntryIds(store, 'b')).toEqual(['e-1', 'e-2']);
    expect(store.watchedLogs.get('career', 'c-1')).toMatchObject({
      windowEnd: T + 5_000,
      entriesIngested: 2,
      lastSuccessAt: T,
    });
    expect(store.seen.has('career', 'c-1', 'e-2')).toBe(true);
    store.close();
  });

  it('changes nothing when building an event fails halfway: no entry, no delivery, no cursor move', () => {
    const { store } = openFresh();
    const before = store.watchedLogs.get('career', 'c-1');
    expect(() =>
      ingest(store, [entry('e-1'), entry('e-2'), entry('e-3')], {
        windowEnd: T + 5_000,
        toEvent: (e) => {
          if (e.id === 'e-2') throw new Error('cannot build');
          return buildCloudEvent({ log: 'career', objectId: 'c-1', entry: e, baseUrl: BASE_URL }, EVENTS);
        },
      }),
    ).toThrow('cannot build');
    expect(count(store, 'SELECT COUNT(*) AS n FROM events')).toBe(0);
    expect(count(store, 'SELECT COUNT(*) AS n FROM deliveries')).toBe(0);
    expect(store.seen.has('career', 'c-1', 'e-1')).toBe(false);
    expect(store.watchedLogs.get('career', 'c-1')).toEqual(before);
    // The same read succeeds afterwards, as if the failed one never happened.
    expect(ingest(store, [entry('e-1'), entry('e-2'), entry('e-3')])).toMatchObject({ emitted: 3, duplicates: 0 });
    store.close();
  });

  it('counts entries read again (overlapping windows, or twice in one page) as duplicates', () => {
    const { store } = openFresh();
    ingest(store, [entry('e-1'), entry('e-2')]);
    expect(ingest(store, [entry('e-2'), entry('e-3')])).toMatchObject({ emitted: 1, duplicates: 1 });
    expect(ingest(store, [entry('e-4'), entry('e-4')])).toMatchObject({ emitted: 1, duplicates: 1 });
    expect(entryIdsInJournal(store)).toEqual(['e-1', 'e-2', 'e-3', 'e-4']);
    store.close();
  });

  it('reports the performedAt of emitted entries only, not of duplicates or undated ones', () => {
    const { store } = openFresh();
    ingest(store, [entry('e-1', T - 3_000)]);
    const result = ingest(store, [
      entry('e-1', T - 3_000),
      entry('e-2', T - 2_000),
      { ...entry('e-3'), performedAt: null },
    ]);
    expect(result).toEqual({ emitted: 2, duplicates: 1, emittedPerformedAt: [T - 2_000], quarantined: 0 });
    store.close();
  });

  it('keeps entry ids apart per log and object', () => {
    const { store } = openFresh();
    ingest(store, [entry('e-1')]);
    expect(ingest(store, [entry('e-1')], { objectId: 'c-2' })).toMatchObject({ emitted: 1, duplicates: 0 });
    expect(ingest(store, [entry('e-1')], { log: 'skill', objectId: 'c-1' })).toMatchObject({
      emitted: 1,
      duplicates: 0,
    });
    store.close();
  });

  it('records silent entries as seen without emitting them', () => {
    const { store } = openFresh();
    expect(ingest(store, [entry('new-1')], { silentEntries: [entry('old-1'), entry('old-2')] })).toMatchObject({
      emitted: 1,
      duplicates: 0,
    });
    expect(entryIdsInJournal(store)).toEqual(['new-1']);
    expect(store.seen.has('career', 'c-1', 'old-1')).toBe(true);
    expect(ingest(store, [entry('old-2')])).toMatchObject({ emitted: 0, duplicates: 1 });
    store.close();
  });

  it('forgets seen ids older than pruneSeenBefore, aging undated ones by when they were seen', () => {
    const { store } = openFresh();
    ingest(store, [entry('old', T - 10 * HOUR), entry('recent', T - 60_000), entry('undated', null)], {
      pruneSeenBefore: T - HOUR,
    });
    expect(['old', 'recent', 'undated'].map((id) => store.seen.has('career', 'c-1', id))).toEqual([false, true, true]);
    ingest(store, [], { now: T + 3 * HOUR, pruneSeenBefore: T + HOUR });
    expect(['recent', 'undated'].map((id) => store.seen.has('career', 'c-1', id))).toEqual([false, false]);
    store.close();
  });

  it('prunes only the log it ingests', () => {
    const { store } = openFresh();
    ingest(store, [entry('x', T - 10 * HOUR)], { objectId: 'c-2' });
    ingest(store, [], { pruneSeenBefore: T });
    expect(store.seen.has('career', 'c-2', 'x')).toBe(true);
    store.close();
  });

  it('does not emit an entry twice once its seen id is pruned while its event is still in the journal', () => {
    const { store } = openFresh();
    ingest(store, [entry('e-1', T - 10 * HOUR)], { pruneSeenBefore: T - HOUR });
    expect(store.seen.has('career', 'c-1', 'e-1')).toBe(false);
    expect(ingest(store, [entry('e-1', T - 10 * HOUR)])).toMatchObject({ emitted: 0, duplicates: 1 });
    expect(entryIdsInJournal(store)).toEqual(['e-1']);
    store.close();
  });
});

describe('sinks and the outbox', () => {
  it('gives a sink registered later only the events ingested after it, and an inactive sink none', () => {
    const { store } = openFresh(['a']);
    ingest(store, [entry('e-1')]);
    expect(
      store.sinks.activate(
        [
          { name: 'a', type: 'file' },
          { name: 'b', type: 'stdout' },
        ],
        T,
      ),
    ).toEqual(['b']);
    ingest(store, [entry('e-2')]);
    expect(pendingEntryIds(store, 'a')).toEqual(['e-1', 'e-2']);
    expect(pendingEntryIds(store, 'b')).toEqual(['e-2']);
    store.sinks.activate([{ name: 'b', type: 'stdout' }], T);
    ingest(store, [entry('e-3')]);
    expect(pendingEntryIds(store, 'a')).toEqual(['e-1', 'e-2']);
    expect(pendingEntryIds(store, 'b')).toEqual(['e-2', 'e-3']);
    expect(store.sinks.list().map((s) => [s.name, s.active])).toEqual([
      ['a', false],
      ['b', true],
    ]);
    store.close();
  });

  it('prunes old journal entries that no sink still waits for, and keeps pending ones', () => {
    const { store } = openFresh(['a', 'b']);
    ingest(store, [entry('both-done'), entry('one-done'), entry('dead'), entry('waiting')]);
    ingest(store, [entry('recent')], { now: T + HOUR });
    const seqs = store.outbox.pending('a', 0, 100).map((d) => d.seq);
    const seq = Object.fromEntries(pendingEntryIds(store, 'a').map((id, i) => [id, seqs[i]]));
    store.outbox.markDelivered('a', [seq['both-done']!, seq['one-done']!, seq.recent!], T);
    store.outbox.markDelivered('b', [seq['both-done']!, seq.recent!], T);
    store.outbox.markDead('a', [{ seq: seq.dead!, error: 'x' }], T);
    store.outbox.markDead('b', [{ seq: seq.dead!, error: 'x' }], T);

    expect(store.outbox.prune(T + 1)).toBe(2);
    expect(entryIdsInJournal(store)).toEqual(['one-done', 'waiting', 'recent']);
    expect(count(store, 'SELECT COUNT(*) AS n FROM deliveries WHERE seq NOT IN (SELECT seq FROM events)')).toBe(0);
    expect(store.outbox.counts('b')).toMatchObject({ pending: 2, delivered: 1, dead: 0 });
    store.close();
  });
});

describe('opening the store', () => {
  it('migrates a new file to the latest schema version', () => {
    const { store } = openFresh();
    expect(store.db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    expect(store.db.pragma('journal_mode', { simple: true })).toBe('wal');
    store.close();
  });

  it('reopens an existing file without migrating again and keeps its contents', () => {
    const { store, file } = openFresh();
    ingest(store, [entry('e-1')]);
    store.setMeta('discovery.completedAt', '123');
    store.close();
    const reopened = ChangefeedStore.open(file);
    expect(reopened.db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    expect(entryIdsInJournal(reopened)).toEqual(['e-1']);
    expect(reopened.getMeta('discovery.completedAt')).toBe('123');
    expect(ingest(reopened, [entry('e-1')])).toMatchObject({ emitted: 0, duplicates: 1 });
    reopened.close();
  });

  it('upgrades learned rates of a version-3 store: counts kept, every change taken as its own session', () => {
    const file = join(makeTempDir(), 'v3.sqlite');
    const raw = new Database(file);
    for (const sql of MIGRATIONS.slice(0, 3)) raw.exec(sql);
    raw.pragma('user_version = 3');
    raw
      .prepare(
        'INSERT INTO rate_estimates (log, object_id, events, hours, burst, updated_at) VALUES (?, ?, ?, ?, ?, ?)',
      )
      .run('career', 'c-1', 7.5, 20, 3, T);
    raw.close();
    const store = ChangefeedStore.open(file);
    const rows = new RateEstimates(store.db).list();
    expect(rows).toEqual([
      expect.objectContaining({
        log: 'career',
        objectId: 'c-1',
        events: 7.5,
        sessions: 7.5,
        hours: 20,
        lastEventAt: null,
        updatedAt: T,
      }),
    ]);
    store.close();
  });

  it('refuses a store written by a newer version', () => {
    const { store, file } = openFresh();
    store.close();
    const raw = new Database(file);
    raw.pragma(`user_version = ${MIGRATIONS.length + 1}`);
    raw.close();
    expect(() => ChangefeedStore.open(file)).toThrow(StoreError);
    expect(() => ChangefeedStore.open(file)).toThrow(/newer than this build knows.*upgrade changefeed/);
  });
});
