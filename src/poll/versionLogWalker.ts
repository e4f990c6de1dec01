import { performedAtMs, type ActivityEntry } from '../api/activityEntry.js';
import { pageItemCount, readActivityPage } from '../api/activityReader.js';
import type { QuarantinedEntry } from '../api/quarantinedEntry.js';
import type { ServiceClient } from '../api/serviceClient.js';
import { ChangefeedError } from '../errors.js';
import { MAX_OFFSET, MAX_PAGE_LIMIT } from '../logs.js';
import type { SortOrder } from '../store/storeRecords.js';
import type { PageSizes } from './pageSize.js';
import { readBytesBound, readSizedPage, type OversizedCount } from './sizedPageReader.js';
import { detectSortOrder } from './sortOrder.js';

/**
 * A skill log longer than offsets can reach and not sorted newest-first, or holding more bytes
 * of entries than one read holds (readBytesBound): a version log cannot be narrowed by date.
 */
export class VersionLogTooLongError extends ChangefeedError {
  constructor(objectId: string, bytesBound?: number) {
    super(
      'VERSION_LOG_TOO_LONG',
      bytesBound === undefined
        ? `the skill log ${objectId} is longer than offsets can reach (${MAX_OFFSET + MAX_PAGE_LIMIT} entries) and is not sorted newest-first; ` +
            'entries past the offset cap cannot be read'
        : `the skill log ${objectId} holds more than ${bytesBound} bytes of entries to read, more than one read holds, ` +
            'and a version log cannot be read in parts',
    );
  }
}

export interface VersionLogWalk {
  client: ServiceClient;
  objectId: string;
  /** Configured order, or the order detected on an earlier read of this log. */
  sortOrder: SortOrder | undefined;
  /** Which of these entry ids were ingested before (one question per page). */
  seenAmong: (entryIds: readonly string[]) => Promise<ReadonlySet<string>>;
  /** Each log's page size, lowered for pages that exceed api.maxResponseBytes. */
  sizes: PageSizes;
  /**
   * Entries performed before this (ms) were all on the log at the previous read, late ones
   * included: when that read began, less `watch.overlapSeconds`. Undefined for a first read.
   */
  settledBefore?: number | undefined;
  signal?: AbortSignal | undefined;
}

/**
 * Reads a skill's version log, which has no date filter (spec 4.5 rule 6, 6 rule 4): pages from
 * offset 0. When the log is known to be newest-first, a page holding only entries already seen
 * ends the read, since everything after it is older; so does a page whose oldest entry was seen
 * and performed before `settledBefore`, since what follows it was there at the previous read,
 * which read it (a poll that finds news would otherwise pay a second page for nothing). Otherwise
 * the order cannot be relied on and the log is read to its end; version logs are short, so that
 * costs few requests.
 */
export async function readVersionLog(walk: VersionLogWalk) {
  const unseen: ActivityEntry[] = [];
  const all: ActivityEntry[] = [];
  const quarantined: QuarantinedEntry[] = [];
  let requests = 0;
  const oversized: OversizedCount = { entries: 0 };
  const bytesBound = readBytesBound(walk.client.maxResponseBytes);
  let bytes = 0;
  const read = () => ({ unseen, requests, detectedOrder: detectSortOrder(all), quarantined });
  /** The page's oldest entry was read before, and so was everything after it. */
  const settled = (oldest: ActivityEntry | undefined, seen: ReadonlySet<string>): boolean => {
    const at = oldest === undefined ? null : performedAtMs(oldest);
    return at !== null && at < (walk.settledBefore ?? Number.NEGATIVE_INFINITY) && seen.has(oldest!.id);
  };
  for (let offset = 0; offset <= MAX_OFFSET;) {
    const page = await readSizedPage({
      log: 'skill',
      objectId: walk.objectId,
      sizes: walk.sizes,
      maxResponseBytes: walk.client.maxResponseBytes,
      read: (limit) =>
        readActivityPage(walk.client, { log: 'skill', objectId: walk.objectId, offset, limit }, walk.signal),
      position: `offset ${offset}`,
      oversized,
    });
    requests += page.requests;
    all.push(...page.entries);
    quarantined.push(...page.quarantined);
    const seen = await walk.seenAmong(page.entries.map((e) => e.id));
    const fresh = page.entries.filter((e) => !seen.has(e.id));
    unseen.push(...fresh);
    if (pageItemCount(page) < page.limit) return read();
    const order = walk.sortOrder ?? detectSortOrder(all);
    if (
      order === 'newest-first' &&
      page.quarantined.length === 0 &&
      (fresh.length === 0 || settled(page.entries.at(-1), seen))
    )
      return read();
    offset += page.limit;
    // A complete read is kept whatever its size; one still going past the bound cannot be narrowed.
    bytes += page.bytes;
    if (bytes > bytesBound) throw new VersionLogTooLongError(walk.objectId, bytesBound);
  }
  if ((walk.sortOrder ?? detectSortOrder(all)) !== 'newest-first') throw new VersionLogTooLongError(walk.objectId);
  return read();
}
