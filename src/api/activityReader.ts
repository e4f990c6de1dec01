import { LOGS, MAX_OFFSET, MAX_PAGE_LIMIT, type ActivityFilter, type LogKind } from '../logs.js';
import { ChangefeedError } from '../errors.js';
import { activityEntrySchema, type ActivityEntry } from './activityEntry.js';
import type { RequestPriority, ServiceClient } from './serviceClient.js';
import type { ResponseMeta } from './responseHeaders.js';
import { activityPageReader } from './activityPageBody.js';
import { RAW_KEPT_BYTES, type QuarantinedEntry } from './quarantinedEntry.js';

export interface ActivityPageRequest {
  log: LogKind;
  objectId?: string | undefined;
  offset: number;
  limit: number;
  /** ISO 8601 UTC; only on windowed logs. */
  from?: string;
  to?: string;
  /** Read-budget priority; by default the identity-provider log's, or a poll's. */
  priority?: RequestPriority;
}

export interface ActivityPage {
  entries: ActivityEntry[];
  /** Entries that cannot become events; the page's others are in `entries`. */
  quarantined: QuarantinedEntry[];
  /** What the page's entries took as JSON: how close the page came to api.maxResponseBytes. */
  bytes: number;
  meta: ResponseMeta;
}

/** Entries the service sent on the page, quarantined ones included: what says whether it was full. */
export function pageItemCount(page: Pick<ActivityPage, 'entries' | 'quarantined'>): number {
  return page.entries.length + page.quarantined.length;
}

/** A request our own code built wrongly; a programming error, never sent to the service. */
export class ForbiddenFilterError extends ChangefeedError {
  constructor(message: string) {
    super('FORBIDDEN_FILTER', message);
  }
}

/**
 * Reads one page of an activity log. Strict where the spec speaks: never sends a filter the log
 * rejects (4.5 rules 1-3, 6), nor a limit or offset beyond the caps. Tolerant where it is silent:
 * the list envelope may carry any extra keys; only `data` is read.
 */
export async function readActivityPage(
  client: ServiceClient,
  request: ActivityPageRequest,
  signal?: AbortSignal,
): Promise<ActivityPage> {
  const log = LOGS[request.log];
  const query: Record<string, string | number | undefined> = {};
  const filters = { from: request.from, to: request.to };
  for (const [name, value] of Object.entries(filters)) {
    if (value === undefined) continue;
    if (!log.filters.has(name as ActivityFilter))
      throw new ForbiddenFilterError(`the ${request.log} log rejects the filter "${name}"`);
    query[name] = value;
  }
  if (!Number.isInteger(request.limit) || request.limit < 1 || request.limit > MAX_PAGE_LIMIT) {
    throw new ForbiddenFilterError(`limit ${request.limit} is outside 1..${MAX_PAGE_LIMIT}`);
  }
  if (!Number.isInteger(request.offset) || request.offset < 0 || request.offset > MAX_OFFSET) {
    throw new ForbiddenFilterError(`offset ${request.offset} is outside 0..${MAX_OFFSET}`);
  }
  query.limit = request.limit;
  query.offset = request.offset;
  const priority: RequestPriority =
    request.priority ?? (request.log === 'identity_provider' ? 'identity_provider' : 'poll');
  const path = log.path(request.objectId);
  const { body, meta } = await client.getJson(path, query, priority, signal, activityPageReader(request.limit));
  // activityPageReader refused any page whose `data` is not an array of at most `limit` entries.
  const { data } = body as { data: unknown[] };
  const { entries, quarantined, bytes } = parseEntries(data, meta.requestId, client.maxEntryBytes);
  return { entries, quarantined, bytes, meta };
}

function parseEntries(
  data: unknown[],
  requestId: string | undefined,
  maxEntryBytes: number,
): { entries: ActivityEntry[]; quarantined: QuarantinedEntry[]; bytes: number } {
  const entries: ActivityEntry[] = [];
  const quarantined: QuarantinedEntry[] = [];
  let bytes = 0;
  data.forEach((item: unknown, index) => {
    const json = JSON.stringify(item) ?? 'undefined';
    const rawBytes = Buffer.byteLength(json);
    bytes += rawBytes;
    const raw = rawBytes > RAW_KEPT_BYTES ? Buffer.from(json).subarray(0, RAW_KEPT_BYTES).toString('utf8') : json;
    const id = typeof item === 'object' && item !== null ? (item as { id?: unknown }).id : undefined;
    const entryId = typeof id === 'string' && id !== '' ? id : undefined;
    const quarantine = (reason: string): void => {
      quarantined.push({ raw, rawBytes, entryId, reason: `data[${index}]: ${reason}`, requestId });
    };
    if (rawBytes > maxEntryBytes) {
      quarantine(`the entry is ${rawBytes} bytes, more than api.maxEntryBytes (${maxEntryBytes})`);
      return;
    }
    const parsed = activityEntrySchema.safeParse(item);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      quarantine(`${issue ? issue.path.join('.') || '(entry)' : '(entry)'}: ${issue?.message ?? 'invalid'}`);
      return;
    }
    entries.push(parsed.data);
  });
  return { entries, quarantined, bytes };
}
