import { performedAtMs, type ActivityEntry } from '../api/activityEntry.js';
import type { SortOrder } from '../store/storeRecords.js';

/**
 * The spec does not say how logs are sorted. Tells it from the data: newest-first when
 * performedAt never increases and decreases at least once, oldest-first the other way round,
 * undefined when entries are too few, undated or mixed. Callers that cannot tell read to the end.
 */
export function detectSortOrder(entries: readonly ActivityEntry[]): SortOrder | undefined {
  let increases = 0;
  let decreases = 0;
  let previous: number | undefined;
  for (const entry of entries) {
    const t = performedAtMs(entry);
    if (t === null) continue;
    if (previous !== undefined) {
      if (t > previous) increases++;
      else if (t < previous) decreases++;
    }
    previous = t;
  }
  if (increases > 0 && decreases === 0) return 'oldest-first';
  if (decreases > 0 && increases === 0) return 'newest-first';
  return undefined;
}

/** Ingestion order within one poll: by performedAt, undated entries last, ties in read order. */
export function inIngestionOrder(entries: readonly ActivityEntry[]): ActivityEntry[] {
  return entries
    .map((entry, index) => ({ entry, index, t: performedAtMs(entry) }))
    .sort((a, b) => {
      if (a.t === null || b.t === null) return a.t === b.t ? a.index - b.index : a.t === null ? 1 : -1;
      return a.t - b.t || a.index - b.index;
    })
    .map((x) => x.entry);
}
