import { MAX_PAGE_LIMIT } from '../logs.js';

/**
 * How many entries a log's pages ask for. A log whose entries are large (100 KB each) sends pages
 * of 200 larger than api.maxResponseBytes: every read is refused and the log never advances. So a
 * refused page halves the page size (down to 1), and a run of pages well under the limit doubles
 * it again, since a smaller page costs more requests of the read budget for the same entries.
 */
export interface PageSizeState {
  limit: number;
  /** Pages in a row read at this size that were well under the limit. */
  roomyInARow: number;
}

export const FULL_PAGE_SIZE: PageSizeState = { limit: MAX_PAGE_LIMIT, roomyInARow: 0 };

/** Roomy pages in a row after which the page size doubles. */
export const RAISE_AFTER_ROOMY_PAGES = 8;

/**
 * What came of reading one page: refused for exceeding maxResponseBytes, or read, with the bytes
 * its entries took.
 */
export type PageOutcome = { tooLarge: true } | { tooLarge: false; bytes: number; maxBytes: number };

/**
 * The page size after `outcome`. A page is roomy when it took at most a quarter of the limit, so
 * the doubled page is still at most half of it: the size does not swing between a refused page
 * and a roomy one.
 */
export function nextPageSize(state: PageSizeState, outcome: PageOutcome): PageSizeState {
  if (outcome.tooLarge) return { limit: Math.max(1, Math.floor(state.limit / 2)), roomyInARow: 0 };
  if (state.limit >= MAX_PAGE_LIMIT) return FULL_PAGE_SIZE;
  if (outcome.bytes * 4 > outcome.maxBytes) return { limit: state.limit, roomyInARow: 0 };
  const roomyInARow = state.roomyInARow + 1;
  if (roomyInARow < RAISE_AFTER_ROOMY_PAGES) return { limit: state.limit, roomyInARow };
  return { limit: Math.min(MAX_PAGE_LIMIT, state.limit * 2), roomyInARow: 0 };
}

/** A span of the service's time, [from, to) in epoch ms: the window a page belongs to. */
export interface TimeSpan {
  from: number;
  to: number;
}

/**
 * The limit for a page of `window` of a log whose size is `state`, where `oversized` is the window
 * that held an entry too large for a page of its own. While a window overlaps it (the overlap of
 * later polls re-reads it), pages are read one entry each: halving down to 1 again would cost about
 * eight requests per poll to find the entry, a page of 1 costs one.
 */
export function pageLimit(state: PageSizeState, oversized: TimeSpan | undefined, window: TimeSpan | undefined): number {
  if (oversized && window && window.from < oversized.to && oversized.from < window.to) return 1;
  return state.limit;
}

/** Each log's page size, by log key, for as long as the poller lives. */
export class PageSizes {
  /** Made at the first page that changes a size or finds an oversized entry: an empty Map holds about 220 bytes. */
  private sizes: Map<string, PageSizeState> | undefined;
  private oversized: Map<string, TimeSpan> | undefined;

  /** The limit for the next page of `key`, of `window` when the log is read by time windows. */
  limit(key: string, window?: TimeSpan): number {
    const mark = this.oversized?.get(key);
    // Windows only move forward: once one starts after the mark, no overlap reaches it again.
    if (mark && window && window.from >= mark.to) this.oversized?.delete(key);
    return pageLimit(this.sizes?.get(key) ?? FULL_PAGE_SIZE, this.oversized?.get(key), window);
  }

  /** Whether pages of `window` are held at one entry by an oversized entry (their outcomes say nothing of the size). */
  heldAtOne(key: string, window: TimeSpan | undefined): boolean {
    return pageLimit(FULL_PAGE_SIZE, this.oversized?.get(key), window) === 1;
  }

  /** `window` of `key` holds an entry too large for a page of its own. */
  markOversized(key: string, window: TimeSpan): void {
    const mark = this.oversized?.get(key);
    // Found again by a window overlapping the last that found it: it sits where the two overlap.
    const overlaps = mark && window.from < mark.to && mark.from < window.to;
    (this.oversized ??= new Map()).set(
      key,
      overlaps ? { from: Math.max(mark.from, window.from), to: Math.min(mark.to, window.to) } : window,
    );
  }

  record(key: string, outcome: PageOutcome): void {
    const next = nextPageSize(this.sizes?.get(key) ?? FULL_PAGE_SIZE, outcome);
    if (next.limit >= MAX_PAGE_LIMIT) this.sizes?.delete(key);
    else (this.sizes ??= new Map()).set(key, next);
  }
}
