import { expect } from 'vitest';
import type { ChangefeedStore } from '../../../src/store/changefeedStore.js';
import { entry, ingest, T } from './storeFixtures.js';

/**
 * Two tenants of one store (a PostgreSQL schema, a SQLite file) see nothing of each other: not
 * their cursors, seen ids, journal, deliveries, dead letters, meta or pruning.
 */
export async function expectTenantsKeptApart(one: ChangefeedStore, two: ChangefeedStore): Promise<void> {
  for (const store of [one, two]) {
    await store.sinks.activate([{ name: 'a', type: 'file' }], T);
    await store.watchedLogs.registerAll([
      { log: 'career', objectId: 'c-1', origin: 'config', coverageStart: T, now: T },
    ]);
  }
  await ingest(one, [entry('e-1'), entry('e-2')], { windowEnd: T + 5 });
  expect(await ingest(two, [entry('e-1')], { windowEnd: T + 7 })).toMatchObject({ emitted: 1, duplicates: 0 });
  await one.setMeta('k', 'one');

  expect(await one.watchedLogs.get('career', 'c-1')).toMatchObject({ windowEnd: T + 5, entriesIngested: 2 });
  expect(await two.watchedLogs.get('career', 'c-1')).toMatchObject({ windowEnd: T + 7, entriesIngested: 1 });
  expect(await two.seen.seenAmong('career', 'c-1', ['e-1', 'e-2'])).toEqual(new Set(['e-1']));
  expect(await one.journalSize()).toBe(2);
  expect(await two.journalSize()).toBe(1);
  const oneSeqs = (await one.outbox.pending('a', 0, 10)).map((d) => d.seq);
  const twoSeqs = (await two.outbox.pending('a', 0, 10)).map((d) => d.seq);
  expect(oneSeqs).toHaveLength(2);
  expect(twoSeqs).toHaveLength(1);
  expect(await one.journal.head()).toBe(Math.max(...oneSeqs));
  expect(await two.journal.head()).toBe(twoSeqs[0]);
  expect((await two.journal.page(0, 10)).events.map((e) => e.seq)).toEqual(twoSeqs);
  // Every event says whose it is, from the journal and from the outbox.
  for (const store of [one, two]) {
    const seqs = (await store.outbox.pending('a', 0, 10)).map((d) => d.seq);
    const payloads = [
      ...(await store.outbox.payloads(seqs)).values(),
      ...(await store.journal.page(0, 10)).events.map((e) => e.payload),
    ];
    expect(payloads.map((p) => (JSON.parse(p) as { tenant: string }).tenant)).toEqual(payloads.map(() => store.tenant));
  }
  // Positions are a tenant's own (SQLite numbers each tenant's from 1, PostgreSQL shares one
  // sequence): the same number in another tenant is another event, or none.
  const bothSeqs = [...new Set([...oneSeqs, ...twoSeqs])];
  expect([...(await one.outbox.payloads(bothSeqs)).keys()].sort()).toEqual([...oneSeqs].sort());
  await one.outbox.markDelivered('a', twoSeqs, T);
  expect(await two.outbox.counts('a')).toMatchObject({ pending: 1, delivered: 0 });

  const stillPending = oneSeqs.find((seq) => !twoSeqs.includes(seq));
  await one.outbox.markDead('a', [{ seq: stillPending!, error: 'x' }], T);
  expect(await one.deadLetters.list()).toHaveLength(1);
  expect(await two.deadLetters.list()).toEqual([]);
  expect(await two.deadLetters.requeueSink('a', T)).toBe(0);
  expect(await one.deadLetters.requeueSink('a', T)).toBe(1);
  expect(await two.deadLetters.requeueCount()).toBe(0);
  expect(await one.getMeta('k')).toBe('one');
  expect(await two.getMeta('k')).toBeUndefined();

  await two.outbox.markDelivered('a', twoSeqs, T);
  expect(await two.outbox.prune(T + 1)).toBe(1);
  expect(await one.journal.prunedThrough()).toBe(0);
  expect(await one.journalSize()).toBe(2);
  expect(await two.journal.head()).toBe(twoSeqs[0]);
}
