import { performedAtMs, type ActivityEntry } from '../api/activityEntry.js';
import { pageItemCount, readActivityPage, type ActivityPage } from '../api/activityReader.js';
import type { QuarantinedEntry } from '../api/quarantinedEntry.js';
import type { RequestPriority, ServiceClient } from '../api/serviceClient.js';
import { ChangefeedError } from '../errors.js';
import { MAX_OFFSET, MAX_PAGE_LIMIT, MAX_REACHABLE_ENTRIES, type LogKind } from '../logs.js';
import type { SortOrder } from '../store/storeRecords.js';
import type { PageSizes } from './pageSize.js';
import { readBytesBound, readSizedPage, type OversizedCount } from './sizedPageReader.js';
import { detectSortOrder } from './sortOrder.js';
import { splitWindow, toIso, type TimeWindow } from './timeWindow.js';

/**
 * A window so dense that even a 1 ms slice holds more entries than offsets can reach, or more
 * bytes of entries than one read holds (readBytesBound).
 */
export class WindowTooDenseError extends ChangefeedError {
  constructor(log: LogKind, objectId: string, window: TimeWindow, bytesBound?: number) {
    const span = `${toIso(window.from)}..${toIso(window.to)}`;
    super(
      'WINDOW_TOO_DENSE',
      bytesBound === undefined
        ? `the ${log} log ${objectId || '(company-wide)'} holds more than ${MAX_REACHABLE_ENTRIES} entries in ${span}, ` +
            'which offsets cannot reach; entries beyond the offset cap in that millisecond cannot be read'
        : `the ${log} log ${objectId || '(company-wide)'} holds more than ${bytesBound} bytes of entries in ${span}, ` +
            'more than one read holds; a millisecond of such entries cannot be read',
    );
  }
}

export interface WindowWalk {
  client: ServiceClient;
  log: LogKind;
  objectId: string;
  /** Configured sort order, or undefined to detect it from the data. */
  sortOrder: SortOrder | undefined;
  signal?: AbortSignal | undefined;
  /** Read-budget priority of every page (a backfill yields to regular polls). */
  priority?: RequestPriority | undefined;
  /** Each log's page size, lowered for pages that exceed api.maxResponseBytes. */
  sizes: PageSizes;
  /**
   * Receives each completely read part of the window, in chronological order: every entry with
   * performedAt in [part.from, windowEnd). The caller commits it with the cursor in one transaction.
   */
  commit: (entries: ActivityEntry[], windowEnd: number) => Promise<void>;
  /** Receives the entries of each page that cannot become events; the caller stores them with the next commit. */
  quarantine?: (entries: QuarantinedEntry[]) => void;
  /** Told of each page read, with the entries the service sent on it (for backfill progress). */
  onPage?: (entries: number) => void;
}

interface WalkStats {
  requests: number;
  splits: number;
  detectedOrder: SortOrder | undefined;
}

/**
 * Reads a window of a time-filtered log (career, identity provider) completely, in pages of the
 * log's page size up to the offset cap. A window that holds more than offsets can reach, or
 * more bytes of entries than one read holds (readBytesBound), is narrowed: when the log is known
 * to be oldest-first, what was read covers [from, last performedAt) exactly, so that part is
 * committed and the walk continues from there; otherwise the window is halved and each half read
 * on its own.
 */
export async function walkWindow(walk: WindowWalk, window: TimeWindow): Promise<WalkStats> {
  const stats: WalkStats = { requests: 0, splits: 0, detectedOrder: walk.sortOrder };
  const stack: TimeWindow[] = [window];
  const oversized: OversizedCount = { entries: 0 };
  while (stack.length > 0) {
    const current = stack.pop() as TimeWindow;
    const read = await readWholeWindow(walk, current, stats, oversized);
    if (!read.overflow) {
      await walk.commit(read.entries, current.to);
      continue;
    }
    const bytesBound = read.overflow === 'bytes' ? readBytesBound(walk.client.maxResponseBytes) : undefined;
    // Halving towards the millisecond would read as much again at each level (22 for an hour).
    const dense = read.quarantined ? undefined : soleMillisecond(read.entries, current);
    if (dense !== undefined)
      throw new WindowTooDenseError(walk.log, walk.objectId, { from: dense, to: dense + 1 }, bytesBound);
    stats.splits++;
    const order = walk.sortOrder ?? detectSortOrder(read.entries);
    const boundary = order === 'oldest-first' ? latestPerformedAt(read.entries, current) : undefined;
    if (boundary !== undefined && boundary > current.from) {
      await walk.commit(
        read.entries.filter((e) => (performedAtMs(e) ?? current.from) < boundary),
        boundary,
      );
      stack.push({ from: boundary, to: current.to });
      continue;
    }
    const halves = splitWindow(current);
    if (!halves) throw new WindowTooDenseError(walk.log, walk.objectId, current, bytesBound);
    stack.push(halves[1], halves[0]);
  }
  return stats;
}

async function readWholeWindow(
  walk: WindowWalk,
  window: TimeWindow,
  stats: WalkStats,
  oversized: OversizedCount,
): Promise<{ entries: ActivityEntry[]; overflow: false | 'offsets' | 'bytes'; quarantined: boolean }> {
  const entries: ActivityEntry[] = [];
  let quarantined = false;
  const bytesBound = readBytesBound(walk.client.maxResponseBytes);
  let bytes = 0;
  for (let offset = 0; offset <= MAX_OFFSET;) {
    const page = await readSizedPage({
      log: walk.log,
      objectId: walk.objectId,
      sizes: walk.sizes,
      maxResponseBytes: walk.client.maxResponseBytes,
      read: (limit) => readWindowPage(walk, window, offset, limit),
      position: `offset ${offset} of ${toIso(window.from)}..${toIso(window.to)}`,
      window,
      oversized,
    });
    stats.requests += page.requests;
    entries.push(...page.entries);
    if (page.quarantined.length > 0) {
      quarantined = true;
      walk.quarantine?.(page.quarantined);
    }
    walk.onPage?.(pageItemCount(page));
    stats.detectedOrder ??= detectSortOrder(page.entries);
    // A page is full by what the service sent, quarantined entries included.
    if (pageItemCount(page) < page.limit) return { entries, overflow: false, quarantined };
    offset += page.limit;
    // A complete window is committed whatever its size; one still going past the bound is narrowed.
    bytes += page.bytes;
    if (bytes > bytesBound) return { entries, overflow: 'bytes', quarantined };
  }
  return { entries, overflow: 'offsets', quarantined };
}

/** One page of `window` of a date-filtered log, at the walk's priority. */
export function readWindowPage(
  walk: Pick<WindowWalk, 'client' | 'log' | 'objectId' | 'priority' | 'signal'>,
  window: TimeWindow,
  offset: number,
  limit = MAX_PAGE_LIMIT,
): Promise<ActivityPage> {
  return readActivityPage(
    walk.client,
    {
      log: walk.log,
      objectId: walk.objectId || undefined,
      offset,
      limit,
      from: toIso(window.from),
      to: toIso(window.to),
      ...(walk.priority ? { priority: walk.priority } : {}),
    },
    walk.signal,
  );
}

/**
 * The one millisecond of `window` that every entry of an overflowing read is dated at, if there
 * is one: that millisecond alone holds more than a read can, whatever order the log is in, and
 * the 1 ms slice would read the same entries again. An entry set aside, undated or of another
 * millisecond leaves the question to halving.
 */
function soleMillisecond(entries: readonly ActivityEntry[], window: TimeWindow): number | undefined {
  const first = entries[0] === undefined ? null : performedAtMs(entries[0]);
  if (first === null || first < window.from || first >= window.to) return undefined;
  return entries.every((e) => performedAtMs(e) === first) ? first : undefined;
}

/**
 * The latest performedAt inside `window`. An entry the service dates outside the window it was
 * asked for says nothing of how far the read came: counted, one dated days ahead would commit the
 * cursor past the window's end, and the entries after the read would never be read.
 */
function latestPerformedAt(entries: readonly ActivityEntry[], window: TimeWindow): number | undefined {
  let latest: number | undefined;
  for (const e of entries) {
    const t = performedAtMs(e);
    if (t !== null && t < window.to && (latest === undefined || t > latest)) latest = t;
  }
  return latest;
}
