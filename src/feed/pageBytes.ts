import type { JournalEvent } from '../store/storeRecords.js';

/**
 * Most characters of stored CloudEvent JSON one page answer carries. `limit` bounds the count, but
 * an entry may be up to api.maxEntryBytes (16 MiB at most): 10,000 of them as one string would
 * exhaust memory, or exceed V8's longest string and fail the page for good.
 */
export const MAX_PAGE_CHARS = 8 * 1024 * 1024;

/**
 * The first of `events` whose JSON adds up to at most `maxChars`, and always the first one: a
 * page stays bounded and a single large event still gets through. The page's cursor then stops
 * at the last event kept, so the next page starts with the first one left out.
 */
export function withinPageBytes(events: readonly JournalEvent[], maxChars = MAX_PAGE_CHARS): JournalEvent[] {
  let total = 0;
  let count = 0;
  for (const event of events) {
    total += event.payload.length;
    if (count > 0 && total > maxChars) break;
    count++;
  }
  return events.slice(0, count);
}
