import type { ActivityEntry } from '../api/activityEntry.js';
import type { ActivityPage } from '../api/activityReader.js';
import { oversizedEntryHead } from '../api/activityPageBody.js';
import { ApiResponseTooLargeError } from '../api/apiErrors.js';
import { RAW_KEPT_BYTES, type QuarantinedEntry } from '../api/quarantinedEntry.js';
import { ChangefeedError } from '../errors.js';
import { logKey, type LogKind } from '../logs.js';
import type { PageSizes, TimeSpan } from './pageSize.js';

export interface SizedPageRead {
  log: LogKind;
  objectId: string;
  sizes: PageSizes;
  maxResponseBytes: number;
  /** Reads the page at the walk's offset with `limit` entries. */
  read: (limit: number) => Promise<ActivityPage>;
  /** Where the page is, for the reason of an entry set aside: "offset 40 of 2026-...Z..2026-...Z". */
  position: string;
  /** The time window the page belongs to, for a log read by windows. */
  window?: TimeSpan | undefined;
  /** The walk's count of entries refused on a page of their own; one object per walk. */
  oversized: OversizedCount;
}

/** Entries, each refused on a page of its own, that one walk of a log has quarantined. */
export interface OversizedCount {
  entries: number;
}

/**
 * More entries than this in one walk, each too large for a page of its own, fail the walk
 * (OversizedEntriesError) instead of being quarantined: a hostile service answering every page so
 * would have a walk keep one phantom entry's first bytes per offset, 10,000 per window. The bound
 * counts the whole walk, not a run, so a readable entry after every 64 cannot reset it.
 */
export const MAX_OVERSIZED_PER_READ = 64;

/**
 * The bytes of entries one read of a log holds before it commits them: 32 MiB, or two pages at
 * api.maxResponseBytes if that is more. Offsets bound a read to 10,200 entries, a few MB as the
 * service writes them, but each entry may be up to api.maxEntryBytes (1 MiB): a service sending
 * such entries at every offset would have one read hold 10 GB. A window read past it is narrowed
 * as one past the offset cap is (windowWalker.ts); a version log, which cannot be, fails.
 */
export function readBytesBound(maxResponseBytes: number): number {
  return Math.max(32 * 1024 * 1024, 2 * maxResponseBytes);
}

/**
 * A read that met more than MAX_OVERSIZED_PER_READ entries too large for a page of their own.
 * Its log is disabled until restart (failurePolicy.ts), as for a window too dense: each try costs
 * 65 reads or more, and a retry every few minutes would spend most of the key's budget on it.
 */
export class OversizedEntriesError extends ChangefeedError {
  constructor(read: Pick<SizedPageRead, 'log' | 'objectId' | 'maxResponseBytes' | 'position'>) {
    super(
      'OVERSIZED_ENTRIES',
      `the ${read.log} log ${read.objectId || '(company-wide)'} answered more than ${MAX_OVERSIZED_PER_READ} ` +
        `entries in one read (the last at ${read.position}) each larger than api.maxResponseBytes ` +
        `(${read.maxResponseBytes}) on a page of its own: so many look like a hostile answer, not entries ` +
        'to set aside (raise api.maxResponseBytes if they are real)',
    );
  }
}

/**
 * Reads one page with the log's page size, halving it while the page is refused for exceeding
 * api.maxResponseBytes. A page of one entry that is still refused holds an entry no read can
 * take: it is quarantined (its position and first bytes kept), so the walk steps over it and the
 * log goes on; while later windows overlap it, they read it a page of one at a time (pageLimit).
 * A refused page whose first bytes reach no entry of its `data` array is not made smaller: its
 * excess is in the envelope, which no page size changes, so the read fails as it is.
 */
export async function readSizedPage(read: SizedPageRead): Promise<{
  entries: ActivityEntry[];
  quarantined: QuarantinedEntry[];
  /** The limit the page was read with: the walk's next offset is this much further. */
  limit: number;
  /** Requests it took, refused ones included (each one took its place in the read budget). */
  requests: number;
  /** The bytes of what the read holds of the page: its entries as JSON, or an oversized one's head. */
  bytes: number;
}> {
  const key = logKey(read);
  // Pages held at one entry by a known oversized entry say nothing about the log's page size.
  const held = read.sizes.heldAtOne(key, read.window);
  for (let requests = 1; ; requests++) {
    const limit = read.sizes.limit(key, read.window);
    try {
      const page = await read.read(limit);
      if (!held) read.sizes.record(key, { tooLarge: false, bytes: page.bytes, maxBytes: read.maxResponseBytes });
      return { entries: page.entries, quarantined: page.quarantined, limit, requests, bytes: page.bytes };
    } catch (error) {
      if (!(error instanceof ApiResponseTooLargeError)) throw error;
      const entryHead = oversizedEntryHead(error.bodyHead ?? '');
      if (entryHead === undefined) {
        throw new ApiResponseTooLargeError(
          `${error.message}; its first ${Buffer.byteLength(error.bodyHead ?? '')} bytes reach no entry of ` +
            'its "data" array, so a page of fewer entries would be no smaller',
          error.path,
          error.requestId,
          error.bodyHead,
        );
      }
      if (!held) read.sizes.record(key, { tooLarge: true });
      if (limit > 1) continue;
      if (++read.oversized.entries > MAX_OVERSIZED_PER_READ) throw new OversizedEntriesError(read);
      if (read.window) read.sizes.markOversized(key, read.window);
      const raw = entryHead.slice(0, RAW_KEPT_BYTES);
      const entry: QuarantinedEntry = {
        raw,
        rawBytes: Buffer.byteLength(raw),
        entryId: undefined,
        reason:
          `the entry at ${read.position} is larger than api.maxResponseBytes (${read.maxResponseBytes}) ` +
          'on a page of its own, so it cannot be read; raw holds its first bytes',
        requestId: error.requestId,
      };
      return { entries: [], quarantined: [entry], limit, requests, bytes: entry.rawBytes };
    }
  }
}
