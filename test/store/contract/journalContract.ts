import { describe, expect, it } from 'vitest';
import type { LogKind } from '../../../src/logs.js';
import { MAX_SCAN_POSITIONS } from '../../../src/store/storeRecords.js';
import { entry, ingest, seqOf, T, type OpenFresh } from './storeFixtures.js';

/** The journal read by position: head, pages, filters, the scan bound and pruning. */
export function defineJournalContract(openFresh: OpenFresh): void {
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

    it('a page stops at maxBytes of JSON, the first event always, and continues after its last event', async () => {
      const { store, first } = await storeWith(30, () => 'career');
      const base = first - 1;
      const all = await store.journal.page(base, 100);
      const sizes = all.events.map((e) => Buffer.byteLength(e.payload, 'utf8'));
      // Room for exactly three events and a little: the fourth does not fit.
      const maxBytes = sizes[0]! + sizes[1]! + sizes[2]! + Math.floor(sizes[3]! / 2);
      const page = await store.journal.page(base, 100, { maxBytes });
      expect(page.events.map((e) => e.seq)).toEqual([1, 2, 3].map((n) => base + n));
      expect(page).toMatchObject({ next: base + 3, reachedHead: false });
      const rest = await store.journal.page(page.next, 100, { maxBytes: 1 });
      expect(rest.events.map((e) => e.seq)).toEqual([base + 4]);
      expect(rest).toMatchObject({ next: base + 4, reachedHead: false });
      // With a filter too, and a page that ends at the head within the bound reaches it.
      const filtered = await store.journal.page(base, 100, { type: '*level*', maxBytes: sizes[0]! + 1 });
      expect(filtered.events.map((e) => e.seq)).toEqual([base + 1]);
      expect(await store.journal.page(base + 29, 100, { maxBytes })).toMatchObject({
        next: base + 30,
        reachedHead: true,
      });
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
