import { describe, expect, it } from 'vitest';
import { RequeueCounts, type RequeueCountRow } from '../../src/store/requeueCounts.js';

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

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('RequeueCounts: one read for the tenants of a process', () => {
  it('answers the questions of one turn of the event loop from one read of every tenant that asked', async () => {
    const db = fakeDatabase({ a: 1, b: 2 });
    const counts = new RequeueCounts();
    expect(await Promise.all(['a', 'b', 'c'].map((t) => counts.of(t, db.read)))).toEqual([1, 2, 0]);
    expect(db.reads).toEqual([['a', 'b', 'c']]);
    // A later turn reads again, for every tenant that ever asked.
    db.counts.a = 5;
    expect(await counts.of('a', db.read)).toBe(5);
    expect(db.reads).toEqual([
      ['a', 'b', 'c'],
      ['a', 'b', 'c'],
    ]);
  });

  it('never answers a question from a read that began before it: a re-queue made meanwhile is seen', async () => {
    const db = fakeDatabase({ a: 1 }, { manual: true });
    const counts = new RequeueCounts();
    const before = counts.of('a', db.read);
    await turn(); // the read for `before` is under way
    db.counts.a = 2; // a re-queue lands, and the tenant asks again
    const after = counts.of('a', db.read);
    const alsoAfter = counts.of('a', db.read);
    db.answer();
    expect(await before).toBe(2); // the manual database answers with what it holds when answered
    await turn();
    expect(db.reads).toHaveLength(2); // the later questions wait for a read of their own, shared
    db.answer();
    expect(await Promise.all([after, alsoAfter])).toEqual([2, 2]);
    expect(db.reads).toHaveLength(2);
  });

  it('reads for a tenant that first asked while a read was under way without it', async () => {
    const db = fakeDatabase({ a: 1, b: 2 }, { manual: true });
    const counts = new RequeueCounts();
    const a = counts.of('a', db.read);
    await turn();
    const b = counts.of('b', db.read);
    db.answer(); // the read for [a]
    expect(await a).toBe(1);
    await turn();
    db.answer(); // the next one, with b
    expect(await b).toBe(2);
    expect(db.reads).toEqual([['a'], ['a', 'b']]);
  });

  it('passes a failed read on to whoever asked, and reads again at the next question', async () => {
    let fail = true;
    const read = (tenants: readonly string[]): Promise<RequeueCountRow[]> =>
      fail
        ? Promise.reject(new Error('database away'))
        : Promise.resolve(tenants.map((t) => ({ tenant: t, value: '7' })));
    const counts = new RequeueCounts();
    await expect(counts.of('a', read)).rejects.toThrow('database away');
    fail = false;
    expect(await counts.of('a', read)).toBe(7);
  });
});
