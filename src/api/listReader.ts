import { z } from 'zod';
import { MAX_OFFSET, MAX_PAGE_LIMIT } from '../logs.js';
import { ApiMalformedResponseError } from './apiErrors.js';
import type { ServiceClient } from './serviceClient.js';

/**
 * The list envelope of `GET /careers` and `GET /skills` is not shown in the spec (4.6), so its
 * shape is configuration. The default matches the single-resource envelope: `{ data: [...] }`.
 */
export const listEnvelopeSchema = z
  .object({
    itemsPath: z
      .string()
      .default('data')
      .describe('Dotted path of the array of items in a list response, e.g. "data" or "data.items".'),
    idField: z.string().default('id').describe('Field of each item that holds its id.'),
    pageSize: z.number().int().min(1).max(MAX_PAGE_LIMIT).default(MAX_PAGE_LIMIT).describe('`limit` sent per page.'),
  })
  .strict();

export type ListEnvelope = z.infer<typeof listEnvelopeSchema>;

/**
 * The longest id a list may give, far above any id in use (a UUID is 36 characters). Ids are opaque
 * and the spec gives them no length, but every listed one is held for the whole list, stored and
 * sent in request paths: ids of 80 KB would have one discovery hold 800 MB; at this bound, 10,200
 * ids hold at most 10 MB.
 */
export const MAX_LISTED_ID_LENGTH = 1_024;

/**
 * Pages through a list endpoint with limit/offset until a short page, returning every id.
 * `truncated` is true when more items exist than offsets can reach (offset cap 10,000), or than
 * `maxPages` read (`check` reads one page to prove the list and its envelope work).
 */
export async function readAllIds(
  client: ServiceClient,
  path: string,
  envelope: ListEnvelope,
  signal?: AbortSignal,
  maxPages = Number.POSITIVE_INFINITY,
): Promise<{ ids: string[]; truncated: boolean }> {
  const ids: string[] = [];
  const seen = new Set<string>();
  // The last page starts exactly at the cap even when the page size does not divide it: pages
  // then overlap, and `seen` drops the ids read twice.
  for (let offset = 0, page = 1; ; offset = Math.min(offset + envelope.pageSize, MAX_OFFSET), page++) {
    const { body, meta } = await client.getJson(path, { limit: envelope.pageSize, offset }, 'discovery', signal);
    const items = pick(body, envelope.itemsPath);
    if (!Array.isArray(items)) {
      throw new ApiMalformedResponseError(
        `list response of GET ${path} has no array at "${envelope.itemsPath}" (set discovery.envelope.itemsPath; request ${meta.requestId ?? 'without id'})`,
        path,
        meta.requestId,
      );
    }
    items.forEach((item, index) => {
      const id =
        typeof item === 'object' && item !== null ? (item as Record<string, unknown>)[envelope.idField] : undefined;
      if (typeof id !== 'string' || id === '') {
        throw new ApiMalformedResponseError(
          `list response of GET ${path} has no string "${envelope.idField}" at ${envelope.itemsPath}[${index}] (request ${meta.requestId ?? 'without id'})`,
          path,
          meta.requestId,
        );
      }
      if (id.length > MAX_LISTED_ID_LENGTH) {
        throw new ApiMalformedResponseError(
          `list response of GET ${path} has an "${envelope.idField}" of ${id.length} characters at ${envelope.itemsPath}[${index}], ` +
            `more than ${MAX_LISTED_ID_LENGTH}, longer than any id (request ${meta.requestId ?? 'without id'})`,
          path,
          meta.requestId,
        );
      }
      if (!seen.has(id)) {
        seen.add(id);
        ids.push(id);
      }
    });
    if (items.length < envelope.pageSize) return { ids, truncated: false };
    if (offset === MAX_OFFSET || page >= maxPages) return { ids, truncated: true };
  }
}

function pick(body: unknown, dottedPath: string): unknown {
  let current: unknown = body;
  for (const key of dottedPath.split('.')) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}
