import { describe, expect, it } from 'vitest';
import { RequeueCounts, type RequeueCountRow } from '../../src/store/requeueCounts.js';

const MAX_AGE_MS = 400;

/** A database of counts, read by hand: each read waits until `answer()` (or answers at once). */
function fakeDatabase(counts: Record<string, number>, options: { manual?: boolean } = {}) {
  const reads: string[][] = [];
  const pending: (() => void)[] = [];
  const read = (tenants: readonly string[]): Promise<RequeueCountRow[]> => {
    reads.push([...tenants]);
    const rows = () => tenants.filter((t) => t in counts).map((t) => ({ tenant: t, value: String(counts[t]) }));
    if (!options.manual) return Promise.resolve(rows());
    return new Promise((resolve) => pending.push(() => resolve(rows())));
  };
  return { read, reads, counts, answer: () => pending.splice(0).forEach((resolve) => resolve()) };
}

function clock() {
  let now = 0;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe('RequeueCounts: one read for the tenants of a process', () => {
  it('answers every tenant from one read while it is younger than the maximum age', async () => {
    const db = fakeDatabase({ a: 1, b: 2 });
    const time = clock();
    const counts = new RequeueCounts(MAX_AGE_MS, time.now);
    expect(await counts.of('a', db.read)).toBe(1);
    expect(await counts.of('b', db.read)).toBe(2); // b was not in the first read: it reads once more
    expect(await counts.of('c', db.read)).toBe(0);
    const readsAfterJoining = db.reads.length;
    time.advance(MAX_AGE_MS - 1);
    for (const t of ['a', 'b', 'c', 'a']) await counts.of(t, db.read);
    expect(db.reads).toHaveLength(readsAfterJoining);
    db.counts.a = 5;
    time.advance(1);
    expect(await counts.of('a', db.read)).toBe(5);
    expect(db.reads).toHaveLength(readsAfterJoining + 1);
    expect(db.reads.at(-1)).toEqual(['a', 'b', 'c']);
  });

  it('shares a read under way among the tenants that ask meanwhile', async () => {
    const db = fakeDatabase({ a: 1, b: 2, c: 3 }, { manual: true });
    const counts = new RequeueCounts(MAX_AGE_MS, clock().now);
    const first = counts.of('a', db.read);
    const again = counts.of('a', db.read);
    db.answer();
    expect(await Promise.all([first, again])).toEqual([1, 1]);
    expect(db.reads).toEqual([['a']]);
  });

  it('reads again for a tenant that first asked while a read was under way without it', async () => {
    const db = fakeDatabase({ a: 1, b: 2 }, { manual: true });
    const counts = new RequeueCounts(MAX_AGE_MS, clock().now);
    const a = counts.of('a', db.read);
    const b = counts.of('b', db.read);
    db.answer(); // the read for [a]
    await a;
    await Promise.resolve();
    db.answer(); // b's own read
    expect(await b).toBe(2);
    expect(db.reads).toEqual([['a'], ['a', 'b']]);
  });

  it('reads again after a re-queue made here, also one made while a read was under way', async () => {
    const db = fakeDatabase({ a: 1 }, { manual: true });
    const counts = new RequeueCounts(MAX_AGE_MS, clock().now);
    const asked = counts.of('a', db.read);
    counts.invalidate(); // this process re-queued: the read under way may not show it
    db.counts.a = 2;
    db.answer();
    await new Promise((resolve) => setImmediate(resolve));
    expect(db.reads).toHaveLength(2); // the answer waits for a read begun after the re-queue
    db.answer();
    expect(await asked).toBe(2);
    expect(await counts.of('a', db.read)).toBe(2);
    expect(db.reads).toHaveLength(2);
    counts.invalidate();
    const afterRequeue = counts.of('a', db.read);
    db.answer();
    expect(await afterRequeue).toBe(2);
    expect(db.reads).toHaveLength(3);
  });

  it('passes a failed read on to whoever asked, and reads again at the next question', async () => {
    let fail = true;
    const read = (tenants: readonly string[]): Promise<RequeueCountRow[]> =>
      fail
        ? Promise.reject(new Error('database away'))
        : Promise.resolve(tenants.map((t) => ({ tenant: t, value: '7' })));
    const counts = new RequeueCounts(MAX_AGE_MS, clock().now);
    await expect(counts.of('a', read)).rejects.toThrow('database away');
    fail = false;
    expect(await counts.of('a', read)).toBe(7);
  });
});
