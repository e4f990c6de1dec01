import type { ActivityEntry } from '../api/activityEntry.js';
import type { ActivityPage } from '../api/activityReader.js';
import { oversizedEntryHead } from '../api/activityPageBody.js';
import { ApiResponseTooLargeError } from '../api/apiErrors.js';
import { RAW_KEPT_BYTES, type QuarantinedEntry } from '../api/quarantinedEntry.js';
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
}

/**
 * Reads one page with the log's page size, halving it while the page is refused for exceeding
 * api.maxResponseBytes. A page of one entry that is still refused holds an entry no read can
 * take: it is quarantined (its position and first bytes kept), so the walk steps over it and the
 * log goes on; while later windows overlap it, they read it a page of one at a time (pageLimit).
 */
export async function readSizedPage(read: SizedPageRead): Promise<{
  entries: ActivityEntry[];
  quarantined: QuarantinedEntry[];
  /** The limit the page was read with: the walk's next offset is this much further. */
  limit: number;
  /** Requests it took, refused ones included (each one took its place in the read budget). */
  requests: number;
}> {
  const key = logKey(read);
  // Pages held at one entry by a known oversized entry say nothing about the log's page size.
  const held = read.sizes.heldAtOne(key, read.window);
  for (let requests = 1; ; requests++) {
    const limit = read.sizes.limit(key, read.window);
    try {
      const page = await read.read(limit);
      if (!held) read.sizes.record(key, { tooLarge: false, bytes: page.bytes, maxBytes: read.maxResponseBytes });
      return { entries: page.entries, quarantined: page.quarantined, limit, requests };
    } catch (error) {
      if (!(error instanceof ApiResponseTooLargeError)) throw error;
      if (!held) read.sizes.record(key, { tooLarge: true });
      if (limit > 1) continue;
      if (read.window) read.sizes.markOversized(key, read.window);
      const raw = oversizedEntryHead(error.bodyHead ?? '').slice(0, RAW_KEPT_BYTES);
      const entry: QuarantinedEntry = {
        raw,
        rawBytes: Buffer.byteLength(raw),
        entryId: undefined,
        reason:
          `the entry at ${read.position} is larger than api.maxResponseBytes (${read.maxResponseBytes}) ` +
          'on a page of its own, so it cannot be read; raw holds its first bytes',
        requestId: error.requestId,
      };
      return { entries: [], quarantined: [entry], limit, requests };
    }
  }
}
