import { describe, expect, it } from 'vitest';
import {
  FULL_PAGE_SIZE,
  nextPageSize,
  pageLimit,
  PageSizes,
  type TimeSpan,
  RAISE_AFTER_ROOMY_PAGES,
  type PageOutcome,
  type PageSizeState,
} from '../../src/poll/pageSize.js';

const MAX = 1_000_000;
const tooLarge: PageOutcome = { tooLarge: true };
const read = (bytes: number): PageOutcome => ({ tooLarge: false, bytes, maxBytes: MAX });
const at = (limit: number, roomyInARow = 0): PageSizeState => ({ limit, roomyInARow });

describe('nextPageSize', () => {
  it.each<[string, PageSizeState, PageOutcome, PageSizeState]>([
    ['a refused full page halves the size', FULL_PAGE_SIZE, tooLarge, at(100)],
    ['an odd size halves downwards', at(25), tooLarge, at(12)],
    ['a refused page of 3 goes to 1', at(3), tooLarge, at(1)],
    ['the size never goes below 1', at(1), tooLarge, at(1)],
    ['a refusal forgets the roomy pages before it', at(50, 7), tooLarge, at(25)],
    ['a roomy page counts towards a raise', at(50, 2), read(MAX / 4), at(50, 3)],
    ['a page over a quarter of the limit is not roomy', at(50, 5), read(MAX / 4 + 1), at(50, 0)],
    ['the last roomy page of the run doubles the size', at(12, RAISE_AFTER_ROOMY_PAGES - 1), read(10), at(24)],
    ['a raise stops at the full page', at(150, RAISE_AFTER_ROOMY_PAGES - 1), read(10), FULL_PAGE_SIZE],
    ['a full page stays full however roomy', FULL_PAGE_SIZE, read(10), FULL_PAGE_SIZE],
    ['a full page that is almost too large stays full', FULL_PAGE_SIZE, read(MAX - 1), FULL_PAGE_SIZE],
  ])('%s', (_name, state, outcome, expected) => {
    expect(nextPageSize(state, outcome)).toEqual(expected);
  });

  it('comes back to full pages after runs of roomy pages, from 1', () => {
    let state = at(1);
    let pages = 0;
    while (state.limit < FULL_PAGE_SIZE.limit) {
      state = nextPageSize(state, read(100));
      pages++;
    }
    // 1, 2, 4, ..., 128, then 200: eight doublings.
    expect(pages).toBe(8 * RAISE_AFTER_ROOMY_PAGES);
  });
});

describe('PageSizes', () => {
  it('keeps a size per log', () => {
    const sizes = new PageSizes();
    sizes.record('career:a', tooLarge);
    sizes.record('career:a', tooLarge);
    expect(sizes.limit('career:a')).toBe(50);
    expect(sizes.limit('career:b')).toBe(200);
  });
});

describe('pageLimit: a window that held an entry too large for a page of its own', () => {
  const mark: TimeSpan = { from: 100, to: 200 };
  it.each<[string, TimeSpan | undefined, TimeSpan | undefined, number]>([
    ["no entry known: the log's size", undefined, { from: 150, to: 250 }, 50],
    ['a window overlapping it is read a page of one at a time', mark, { from: 150, to: 250 }, 1],
    ['a window inside it too', mark, { from: 120, to: 130 }, 1],
    ['a window ending where it starts does not hold it', mark, { from: 0, to: 100 }, 50],
    ['a window starting where it ends does not hold it', mark, { from: 200, to: 300 }, 50],
    ['a read without windows (the skill log) keeps the size', mark, undefined, 50],
  ])('%s', (_name, oversized, window, expected) => {
    expect(pageLimit(at(50), oversized, window)).toBe(expected);
  });

  it('narrows to where two windows that found it overlap, and is forgotten once windows pass it', () => {
    const sizes = new PageSizes();
    sizes.markOversized('career:a', { from: 0, to: 120 });
    sizes.markOversized('career:a', { from: 60, to: 180 });
    expect(sizes.limit('career:a', { from: 110, to: 200 })).toBe(1);
    expect(sizes.limit('career:a', { from: 120, to: 200 })).toBe(200);
    expect(sizes.limit('career:a', { from: 0, to: 200 })).toBe(200);
  });
});
