import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { ActivityEntry } from '../../src/api/activityEntry.js';
import { buildCloudEvent } from '../../src/events/cloudEvent.js';
import type { LogKind } from '../../src/logs.js';
import { SqliteChangefeedStore } from '../../src/store/sqlite/sqliteStore.js';
import type { IngestRequest } from '../../src/store/storeRecords.js';
import { StoreError } from '../../src/store/sqlite/database.js';
import { MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { makeTempDir } from '../support/tempDir.js';
import { BASE_URL, EVENTS } from './scriptedSink.js';

const T = Date.UTC(2026, 4, 1, 12, 0, 0);
const HOUR = 3_600_000;

async function openFresh(sinks: string[] = ['a']) {
  const file = join(makeTempDir(), 's.sqlite');
  const store = SqliteChangefeedStore.open(file);
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
  return { file, store };
}

const entry = (id: string, performedAt: number | null = T - 60_000): ActivityEntry => ({
  id,
  event: 'level_added',
  performedAt: performedAt === null ? null : new Date(performedAt).toISOString(),
});

async function ingest(store: SqliteChangefeedStore, entries: ActivityEntry[], over: Partial<IngestRequest> = {}) {
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

const count = (store: SqliteChangefeedStore, sql: string): number => (store.db.prepare(sql).get() as { n: number }).n;
const entryIdsInJournal = (store: SqliteChangefeedStore): string[] =>
  store.db
    .prepare<[], { payload: string }>('SELECT payload FROM events ORDER BY seq')
    .all()
    .map((r) => (JSON.parse(r.payload) as { entryid: string }).entryid);
/** Entry ids of the pending deliveries of `sink`, in seq order, read back from their stored CloudEvents. */
async function pendingEntryIds(store: SqliteChangefeedStore, sink: string): Promise<string[]> {
  const seqs = (await store.outbox.pending(sink, 0, 100)).map((d) => d.seq);
  const payloads = await store.outbox.payloads(seqs);
  return seqs.map((seq) => (JSON.parse(payloads.get(seq)!) as { entryid: string }).entryid);
}

describe('ChangefeedStore.ingest', () => {
  it('commits the entries, one delivery per active sink and the cursor together', async () => {
    const { store } = await openFresh(['a', 'b']);
    expect(await ingest(store, [entry('e-1'), entry('e-2')], { windowEnd: T + 5_000 })).toMatchObject({
      emitted: 2,
      duplicates: 0,
    });
    expect(entryIdsInJournal(store)).toEqual(['e-1', 'e-2']);
    expect(await pendingEntryIds(store, 'a')).toEqual(['e-1', 'e-2']);
    expect(await pendingEntryIds(store, 'b')).toEqual(['e-1', 'e-2']);
    expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({
      windowEnd: T + 5_000,
      entriesIngested: 2,
      lastSuccessAt: T,
    });
    expect((await store.seen.seenAmong('career', 'c-1', ['e-2'])).has('e-2')).toBe(true);
    await store.close();
  });

  it('changes nothing when building an event fails halfway: no entry, no delivery, no cursor move', async () => {
    const { store } = await openFresh();
    const before = await store.watchedLogs.get('career', 'c-1');
    await expect(
      ingest(store, [entry('e-1'), entry('e-2'), entry('e-3')], {
        windowEnd: T + 5_000,
        toEvent: (e) => {
          if (e.id === 'e-2') throw new Error('cannot build');
          return buildCloudEvent({ log: 'career', objectId: 'c-1', entry: e, baseUrl: BASE_URL }, EVENTS);
        },
      }),
    ).rejects.toThrow('cannot build');
    expect(count(store, 'SELECT COUNT(*) AS n FROM events')).toBe(0);
    expect(count(store, 'SELECT COUNT(*) AS n FROM deliveries')).toBe(0);
    expect((await store.seen.seenAmong('career', 'c-1', ['e-1'])).has('e-1')).toBe(false);
    expect(await store.watchedLogs.get('career', 'c-1')).toEqual(before);
    // The same read succeeds afterwards, as if the failed one never happened.
    expect(await ingest(store, [entry('e-1'), entry('e-2'), entry('e-3')])).toMatchObject({
      emitted: 3,
      duplicates: 0,
    });
    await store.close();
  });

  it('counts entries read again (overlapping windows, or twice in one page) as duplicates', async () => {
    const { store } = await openFresh();
    await ingest(store, [entry('e-1'), entry('e-2')]);
    expect(await ingest(store, [entry('e-2'), entry('e-3')])).toMatchObject({ emitted: 1, duplicates: 1 });
    expect(await ingest(store, [entry('e-4'), entry('e-4')])).toMatchObject({ emitted: 1, duplicates: 1 });
    expect(entryIdsInJournal(store)).toEqual(['e-1', 'e-2', 'e-3', 'e-4']);
    await store.close();
  });

  it('reports the performedAt of emitted entries only, not of duplicates or undated ones', async () => {
    const { store } = await openFresh();
    await ingest(store, [entry('e-1', T - 3_000)]);
    const result = await ingest(store, [
      entry('e-1', T - 3_000),
      entry('e-2', T - 2_000),
      { ...entry('e-3'), performedAt: null },
    ]);
    expect(result).toEqual({ emitted: 2, duplicates: 1, emittedPerformedAt: [T - 2_000], quarantined: 0 });
    await store.close();
  });

  it('keeps entry ids apart per log and object', async () => {
    const { store } = await openFresh();
    await ingest(store, [entry('e-1')]);
    expect(await ingest(store, [entry('e-1')], { objectId: 'c-2' })).toMatchObject({ emitted: 1, duplicates: 0 });
    expect(await ingest(store, [entry('e-1')], { log: 'skill', objectId: 'c-1' })).toMatchObject({
      emitted: 1,
      duplicates: 0,
    });
    await store.close();
  });

  it('records silent entries as seen without emitting them', async () => {
    const { store } = await openFresh();
    expect(await ingest(store, [entry('new-1')], { silentEntries: [entry('old-1'), entry('old-2')] })).toMatchObject({
      emitted: 1,
      duplicates: 0,
    });
    expect(entryIdsInJournal(store)).toEqual(['new-1']);
    expect((await store.seen.seenAmong('career', 'c-1', ['old-1'])).has('old-1')).toBe(true);
    expect(await ingest(store, [entry('old-2')])).toMatchObject({ emitted: 0, duplicates: 1 });
    await store.close();
  });

  it('forgets seen ids older than pruneSeenBefore, aging undated ones by when they were seen', async () => {
    const { store } = await openFresh();
    await ingest(store, [entry('old', T - 10 * HOUR), entry('recent', T - 60_000), entry('undated', null)], {
      pruneSeenBefore: T - HOUR,
    });
    const seenNow = await store.seen.seenAmong('career', 'c-1', ['old', 'recent', 'undated']);
    expect(['old', 'recent', 'undated'].map((id) => seenNow.has(id))).toEqual([false, true, true]);
    await ingest(store, [], { now: T + 3 * HOUR, pruneSeenBefore: T + HOUR });
    expect((await store.seen.seenAmong('career', 'c-1', ['recent', 'undated'])).size).toBe(0);
    await store.close();
  });

  it('prunes only the log it ingests', async () => {
    const { store } = await openFresh();
    await ingest(store, [entry('x', T - 10 * HOUR)], { objectId: 'c-2' });
    await ingest(store, [], { pruneSeenBefore: T });
    expect((await store.seen.seenAmong('career', 'c-2', ['x'])).has('x')).toBe(true);
    await store.close();
  });

  it('does not emit an entry twice once its seen id is pruned while its event is still in the journal', async () => {
    const { store } = await openFresh();
    await ingest(store, [entry('e-1', T - 10 * HOUR)], { pruneSeenBefore: T - HOUR });
    expect((await store.seen.seenAmong('career', 'c-1', ['e-1'])).has('e-1')).toBe(false);
    expect(await ingest(store, [entry('e-1', T - 10 * HOUR)])).toMatchObject({ emitted: 0, duplicates: 1 });
    expect(entryIdsInJournal(store)).toEqual(['e-1']);
    await store.close();
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
    await store.sinks.activate([{ name: 'b', type: 'stdout' }], T);
    await ingest(store, [entry('e-3')]);
    expect(await pendingEntryIds(store, 'a')).toEqual(['e-1', 'e-2']);
    expect(await pendingEntryIds(store, 'b')).toEqual(['e-2', 'e-3']);
    expect((await store.sinks.list()).map((s) => [s.name, s.active])).toEqual([
      ['a', false],
      ['b', true],
    ]);
    await store.close();
  });

  it('prunes old journal entries that no sink still waits for, and keeps pending ones', async () => {
    const { store } = await openFresh(['a', 'b']);
    await ingest(store, [entry('both-done'), entry('one-done'), entry('dead'), entry('waiting')]);
    await ingest(store, [entry('recent')], { now: T + HOUR });
    const seqs = (await store.outbox.pending('a', 0, 100)).map((d) => d.seq);
    const seq = Object.fromEntries((await pendingEntryIds(store, 'a')).map((id, i) => [id, seqs[i]]));
    await store.outbox.markDelivered('a', [seq['both-done']!, seq['one-done']!, seq.recent!], T);
    await store.outbox.markDelivered('b', [seq['both-done']!, seq.recent!], T);
    await store.outbox.markDead('a', [{ seq: seq.dead!, error: 'x' }], T);
    await store.outbox.markDead('b', [{ seq: seq.dead!, error: 'x' }], T);

    expect(await store.outbox.prune(T + 1)).toBe(2);
    expect(entryIdsInJournal(store)).toEqual(['one-done', 'waiting', 'recent']);
    expect(count(store, 'SELECT COUNT(*) AS n FROM deliveries WHERE seq NOT IN (SELECT seq FROM events)')).toBe(0);
    expect(await store.outbox.counts('b')).toMatchObject({ pending: 2, delivered: 1, dead: 0 });
    await store.close();
  });
});

describe('opening the store', () => {
  it('migrates a new file to the latest schema version', async () => {
    const { store } = await openFresh();
    expect(store.db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    expect(store.db.pragma('journal_mode', { simple: true })).toBe('wal');
    await store.close();
  });

  it('reopens an existing file without migrating again and keeps its contents', async () => {
    const { store, file } = await openFresh();
    await ingest(store, [entry('e-1')]);
    await store.setMeta('discovery.completedAt', '123');
    await store.close();
    const reopened = SqliteChangefeedStore.open(file);
    expect(reopened.db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    expect(entryIdsInJournal(reopened)).toEqual(['e-1']);
    expect(await reopened.getMeta('discovery.completedAt')).toBe('123');
    expect(await ingest(reopened, [entry('e-1')])).toMatchObject({ emitted: 0, duplicates: 1 });
    await reopened.close();
  });

  it('upgrades learned rates of a version-3 store: counts kept, every change taken as its own session', async () => {
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
    const store = SqliteChangefeedStore.open(file);
    const rows = await store.rates.list();
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
    await store.close();
  });

  it('refuses a store written by a newer version', async () => {
    const { store, file } = await openFresh();
    await store.close();
    const raw = new Database(file);
    raw.pragma(`user_version = ${MIGRATIONS.length + 1}`);
    raw.close();
    expect(() => SqliteChangefeedStore.open(file)).toThrow(StoreError);
    expect(() => SqliteChangefeedStore.open(file)).toThrow(/newer than this build knows.*upgrade changefeed/);
  });
});
