import type { LogKind } from '../logs.js';

/**
 * One activity entry exactly as the simulator serves it: the shared envelope of spec 2.8 plus the
 * per-log extra fields of section 6, and (when configured) fields the spec does not list.
 */
export interface Entry {
  id: string;
  event: string | null;
  description: string | null;
  performedById: string | null;
  performedAt: string | null;
  [field: string]: unknown;
}

/** An entry with the bookkeeping the API never shows. */
export interface StoredEntry {
  readonly log: LogKind;
  readonly objectId: string | null;
  readonly entry: Entry;
  /**
   * When the change happened, in epoch ms. Equals performedAt when that is set; for an entry with
   * a null performedAt it is the time the service filters and sorts it by.
   */
  readonly recordedAt: number;
  /** When the entry becomes visible to reads; later than recordedAt for a late arrival. */
  readonly arrivesAt: number;
}

export interface EntryFilter {
  event?: string;
  performedBy?: string;
  relatedPersonId?: string;
  bulkGroupId?: string;
  /** Inclusive lower bound on recordedAt, epoch ms. */
  from?: number;
  /** Exclusive upper bound on recordedAt, epoch ms. */
  to?: number;
}

export type SortOrder = 'newest-first' | 'oldest-first';

interface Stream {
  /** Ascending by (recordedAt, id) when `sorted`; appends only clear the flag. */
  entries: StoredEntry[];
  sorted: boolean;
}

export function streamKey(log: LogKind, objectId: string | null): string {
  return `${log}:${objectId}`;
}

const compareAscending = (a: StoredEntry, b: StoredEntry): number =>
  a.recordedAt - b.recordedAt || (a.entry.id < b.entry.id ? -1 : a.entry.id > b.entry.id ? 1 : 0);

/**
 * Every generated or appended entry, per log stream (one stream per career, per skill, and one
 * for the identity provider). Entries may be stored before they arrive; reads only see those whose
 * arrival time has passed, which is how late arrivals and bursts spread over time are modelled.
 */
export class ActivityStore {
  private readonly streams = new Map<string, Stream>();

  append(stored: StoredEntry): void {
    const key = streamKey(stored.log, stored.objectId);
    let stream = this.streams.get(key);
    if (!stream) {
      stream = { entries: [], sorted: true };
      this.streams.set(key, stream);
    }
    const last = stream.entries[stream.entries.length - 1];
    if (last && compareAscending(last, stored) > 0) stream.sorted = false;
    stream.entries.push(stored);
  }

  /** Visible entries of one stream that match the filter, in the requested order. */
  query(log: LogKind, objectId: string | null, filter: EntryFilter, now: number, order: SortOrder): StoredEntry[] {
    const stream = this.streams.get(streamKey(log, objectId));
    if (!stream) return [];
    const entries = this.sortedEntries(stream);
    const start = filter.from === undefined ? 0 : lowerBound(entries, filter.from);
    const end = filter.to === undefined ? entries.length : lowerBound(entries, filter.to);
    const out: StoredEntry[] = [];
    for (let i = start; i < end; i++) {
      const stored = entries[i] as StoredEntry;
      if (stored.arrivesAt <= now && matches(stored.entry, filter)) out.push(stored);
    }
    if (order === 'newest-first') out.reverse();
    return out;
  }

  /** Every visible entry of every stream, in arrival order (ties by recordedAt, then id). */
  visible(now: number): StoredEntry[] {
    const out: StoredEntry[] = [];
    for (const stream of this.streams.values()) for (const s of stream.entries) if (s.arrivesAt <= now) out.push(s);
    return out.sort((a, b) => a.arrivesAt - b.arrivesAt || compareAscending(a, b));
  }

  /** Forgets entries of a stream that have not arrived yet: a deleted object records nothing more. */
  dropPending(log: LogKind, objectId: string | null, now: number): number {
    const stream = this.streams.get(streamKey(log, objectId));
    if (!stream) return 0;
    const before = stream.entries.length;
    stream.entries = stream.entries.filter((s) => s.arrivesAt <= now);
    return before - stream.entries.length;
  }

  private sortedEntries(stream: Stream): StoredEntry[] {
    if (!stream.sorted) {
      stream.entries.sort(compareAscending);
      stream.sorted = true;
    }
    return stream.entries;
  }
}

function matches(entry: Entry, filter: EntryFilter): boolean {
  return (
    (filter.event === undefined || entry.event === filter.event) &&
    (filter.performedBy === undefined || entry.performedById === filter.performedBy) &&
    (filter.relatedPersonId === undefined || entry.relatedPersonId === filter.relatedPersonId) &&
    (filter.bulkGroupId === undefined || entry.bulkGroupId === filter.bulkGroupId)
  );
}

/** First index whose recordedAt is >= `at`. */
function lowerBound(entries: readonly StoredEntry[], at: number): number {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((entries[mid] as StoredEntry).recordedAt < at) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
