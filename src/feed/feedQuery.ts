import { LOG_KINDS, parseLogName, type LogKind } from '../logs.js';
import type { FeedConfig } from './feedConfig.js';
import { parseCursor } from './feedCursor.js';

/** What a page or stream request asks for, validated. */
export interface FeedQuery {
  /** Sequence to read after; undefined: from the oldest event still in the journal. */
  after: number | undefined;
  /** Most events per page (a stream reads in pages of this size too). */
  limit: number;
  /** Only events of this log (asked for by its name: `career`, `skill` or `identity_provider`). */
  log: LogKind | undefined;
  /** Only events whose CloudEvent type matches this glob (`*` any run of characters, `?` one). */
  type: string | undefined;
  /** How long a page request may wait for an event when none is there (long-polling); 0 for streams. */
  waitMs: number;
}

export interface InvalidParameter {
  name: string;
  reason: string;
}

/** A type glob as the feed and the console take it: letters, digits, `.`, `_`, `-` and the wildcards; also a valid SQLite GLOB with the same meaning. */
export const TYPE_GLOB = /^[A-Za-z0-9._*?-]{1,200}$/;
const PAGE_PARAMETERS = ['after', 'limit', 'log', 'type', 'wait'];
const STREAM_PARAMETERS = ['after', 'log', 'type'];

/**
 * Validates the query string of `GET /v1/events` (`mode` page) or `GET /v1/events/stream`, and
 * for streams the `Last-Event-ID` header, which wins over `after`: a browser's EventSource
 * reconnects to the URL it started with and says where it got to in that header.
 */
export function parseFeedQuery(
  params: URLSearchParams,
  config: Pick<FeedConfig, 'maxPageSize' | 'defaultPageSize' | 'maxWaitSeconds'>,
  mode: 'page' | 'stream',
  lastEventId?: string,
): { query: FeedQuery; deprecation?: string } | { invalid: InvalidParameter } {
  const invalid = (name: string, reason: string) => ({ invalid: { name, reason } });
  const allowed = mode === 'page' ? PAGE_PARAMETERS : STREAM_PARAMETERS;
  const seen = new Set<string>();
  for (const name of params.keys()) {
    if (!allowed.includes(name))
      return invalid(name, `unknown parameter; ${mode === 'page' ? 'a page' : 'a stream'} takes ${allowed.join(', ')}`);
    if (seen.has(name)) return invalid(name, 'given more than once');
    seen.add(name);
  }
  let after: number | undefined;
  const cursorText = lastEventId ?? params.get('after') ?? undefined;
  if (cursorText !== undefined) {
    after = parseCursor(cursorText);
    if (after === undefined)
      return invalid(
        lastEventId === undefined ? 'after' : 'Last-Event-ID',
        'not a cursor: use the `sequence` of an event, an SSE `id`, or 0 for the start of the journal',
      );
  }
  let limit = config.defaultPageSize;
  const limitText = params.get('limit');
  if (limitText !== null) {
    limit = Number(limitText);
    if (!/^[0-9]{1,6}$/.test(limitText) || limit < 1 || limit > config.maxPageSize)
      return invalid('limit', `must be a whole number from 1 to ${config.maxPageSize}`);
  }
  const logName = params.get('log') ?? undefined;
  const named = logName === undefined ? undefined : parseLogName(logName);
  if (logName !== undefined && named === undefined) return invalid('log', `must be one of ${LOG_KINDS.join(', ')}`);
  const log = named?.kind;
  const type = params.get('type') ?? undefined;
  if (type !== undefined && !TYPE_GLOB.test(type))
    return invalid(
      'type',
      'must be a glob of up to 200 letters, digits, `.`, `_`, `-`, `*` (any run of characters) and `?` (one character)',
    );
  let waitMs = 0;
  const waitText = params.get('wait');
  if (waitText !== null) {
    const seconds = Number(waitText);
    if (!/^[0-9]{1,4}$/.test(waitText) || seconds > config.maxWaitSeconds)
      return invalid('wait', `must be a whole number of seconds from 0 to ${config.maxWaitSeconds}`);
    waitMs = seconds * 1000;
  }
  const query = { after, limit, log, type, waitMs };
  if (!named?.deprecated || log === undefined) return { query };
  return { query, deprecation: `log=${logName} is deprecated; use log=${log}` };
}
