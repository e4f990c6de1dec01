import { describe, expect, it } from 'vitest';
import type { ActivityEntry } from '../../src/api/activityEntry.js';
import { detectSortOrder, inIngestionOrder } from '../../src/poll/sortOrder.js';

const at = (id: string, performedAt: string | null | undefined): ActivityEntry =>
  performedAt === undefined ? { id } : { id, performedAt };
const minute = (m: number): string => `2026-03-01T10:${String(m).padStart(2, '0')}:00Z`;
const ids = (entries: readonly ActivityEntry[]): string[] => entries.map((e) => e.id);

describe('detectSortOrder', () => {
  it('tells newest-first from strictly decreasing times', () => {
    expect(detectSortOrder([at('a', minute(3)), at('b', minute(2)), at('c', minute(1))])).toBe('newest-first');
  });

  it('tells oldest-first from strictly increasing times', () => {
    expect(detectSortOrder([at('a', minute(1)), at('b', minute(2)), at('c', minute(3))])).toBe('oldest-first');
  });

  it('tolerates ties in either order', () => {
    expect(detectSortOrder([at('a', minute(3)), at('b', minute(3)), at('c', minute(1))])).toBe('newest-first');
    expect(detectSortOrder([at('a', minute(1)), at('b', minute(1)), at('c', minute(2))])).toBe('oldest-first');
  });

  it('cannot tell when every time is the same', () => {
    expect(detectSortOrder([at('a', minute(1)), at('b', minute(1))])).toBeUndefined();
  });

  it('cannot tell from mixed order', () => {
    expect(detectSortOrder([at('a', minute(1)), at('b', minute(3)), at('c', minute(2))])).toBeUndefined();
  });

  it('cannot tell from undated entries or a single entry or none', () => {
    expect(detectSortOrder([at('a', null), at('b', undefined), at('c', null)])).toBeUndefined();
    expect(detectSortOrder([at('a', minute(1))])).toBeUndefined();
    expect(detectSortOrder([])).toBeUndefined();
  });

  it('skips undated entries between dated ones', () => {
    expect(detectSortOrder([at('a', minute(5)), at('b', null), at('c', minute(4)), at('d', null)])).toBe(
      'newest-first',
    );
  });

  it('compares instants, not strings, across time-zone offsets', () => {
    // 10:30+02:00 is 08:30Z, earlier than 09:00Z although it sorts later as text.
    expect(detectSortOrder([at('a', '2026-03-01T09:00:00Z'), at('b', '2026-03-01T10:30:00+02:00')])).toBe(
      'newest-first',
    );
  });
});

describe('inIngestionOrder', () => {
  it('orders a newest-first page by performedAt, oldest first', () => {
    expect(ids(inIngestionOrder([at('c', minute(3)), at('b', minute(2)), at('a', minute(1))]))).toEqual([
      'a',
      'b',
      'c',
    ]);
  });

  it('puts undated entries last, in read order', () => {
    const page = [at('n1', null), at('b', minute(2)), at('n2', undefined), at('a', minute(1)), at('n3', null)];
    expect(ids(inIngestionOrder(page))).toEqual(['a', 'b', 'n1', 'n2', 'n3']);
  });

  it('keeps read order for entries with the same time', () => {
    const page = [at('x', minute(2)), at('t1', minute(1)), at('t2', minute(1)), at('t3', minute(1))];
    expect(ids(inIngestionOrder(page))).toEqual(['t1', 't2', 't3', 'x']);
  });

  it('does not reorder the array it was given', () => {
    const page = [at('b', minute(2)), at('a', minute(1))];
    inIngestionOrder(page);
    expect(ids(page)).toEqual(['b', 'a']);
  });
});
