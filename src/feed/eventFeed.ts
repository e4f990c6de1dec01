import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { describeError } from '../errors.js';
import type { JournalStore } from '../store/changefeedStore.js';
import { streamEvents } from './eventStream.js';
import type { FeedConfig } from './feedConfig.js';
import { formatCursor } from './feedCursor.js';
import type { FeedObserver } from './feedObserver.js';
import { sendProblem } from './feedProblem.js';
import { parseFeedQuery, type FeedQuery } from './feedQuery.js';
import type { FeedReader, FeedSlots } from './feedTokens.js';
import { JournalSignal } from './journalSignal.js';
import { writeWithin } from '../writeWithin.js';

export const PAGE_CONTENT_TYPE = 'application/cloudevents-batch+json';
/** Stretches of the journal (MAX_SCAN_POSITIONS each) one page request looks through at most. */
const SCAN_STRETCHES = 10;

/** A request the feed router let through: who asked, for what, and where this feed is served. */
export interface FeedRequest {
  mode: 'page' | 'stream';
  /** The path of pages of this feed (`/v1/events`, `/v1/tenants/<tenant>/events`): `Link` continues on it. */
  pagePath: string;
  reader: FeedReader;
  slots: FeedSlots;
}

/** The limits of the feed a tenant's journal is served with. */
export type FeedLimits = Pick<
  FeedConfig,
  | 'maxPageSize'
  | 'defaultPageSize'
  | 'maxWaitSeconds'
  | 'heartbeatSeconds'
  | 'maxStreamsPerToken'
  | 'maxPagesPerToken'
  | 'maxPageBytes'
  | 'writeTimeoutSeconds'
>;

/**
 * One tenant's journal over HTTP, for consumers that cannot run a broker or expose a webhook
 * (its paths and tokens are the feed router's, tenantFeeds.ts):
 *
 * - pages (`?after=&limit=&log=&type=&wait=`): CloudEvents in ingestion order
 *   (`application/cloudevents-batch+json`, a JSON array), each with the CloudEvents `sequence`
 *   extension attribute holding its cursor; the cursor to continue from in a `Link: <...>;
 *   rel="next"` header and in `Changefeed-Cursor`. An empty page when nothing is new, or with
 *   `wait` seconds it waits for the first new event (long-polling).
 * - `/stream`: the same as Server-Sent Events, resumed with Last-Event-ID.
 *
 * A position older than what pruning kept answers 410 with the oldest complete cursor.
 */
export class EventFeed {
  private readonly signal: JournalSignal;
  private readonly open = new Set<AbortController>();

  constructor(
    private readonly config: FeedLimits,
    private readonly journal: JournalStore,
    private readonly clock: Clock,
    private readonly observer?: FeedObserver,
    /** Where a journal that cannot be read is told; the client gets a fixed answer. */
    private readonly logger?: Pick<Logger, 'warn'>,
  ) {
    this.signal = new JournalSignal(clock);
  }

  /** Events were appended to the journal: wake long-polls and streams. */
  notify(): void {
    this.signal.notify();
  }

  /**
   * Ends every open stream and long-poll (a waiting one answers with the empty page it has), so
   * their clients ask again and find where the tenant is served now.
   */
  close(): void {
    for (const abort of this.open) abort.abort();
  }

  /** Answers a page or stream request the router authorized for this tenant. */
  handle(req: IncomingMessage, res: ServerResponse, request: FeedRequest): void {
    const { mode } = request;
    const observer = this.observer;
    // 'close' comes however the response ends: answered, or the client gone before an answer.
    if (observer) res.once('close', () => observer.feedAnswered(mode, res.headersSent ? res.statusCode : undefined));
    if (req.method !== 'GET' && !(mode === 'page' && req.method === 'HEAD')) {
      const allow = { allow: 'GET' };
      sendProblem(res, 405, 'method-not-allowed', 'Method not allowed', 'the feed is read with GET', {}, allow);
      return;
    }
    const url = new URL(req.url ?? '/', 'http://feed');
    const lastEventId = mode === 'stream' ? header(req, 'last-event-id') : undefined;
    const parsed = parseFeedQuery(url.searchParams, this.config, mode, lastEventId);
    if ('invalid' in parsed) {
      const { name, reason } = parsed.invalid;
      sendProblem(res, 400, 'invalid-parameter', `Invalid parameter ${name}`, `${name}: ${reason}`, {
        'invalid-params': [{ name, reason }],
      });
      return;
    }
    // RFC 7234's warn-code 299 (a persistent warning), on whatever this request answers.
    if (parsed.deprecation) res.setHeader('warning', `299 changefeed "${parsed.deprecation}"`);
    const abort = new AbortController();
    res.once('close', () => abort.abort());
    this.open.add(abort);
    const served = (async () => {
      if (mode === 'stream') {
        const start = await this.position(res, parsed.query);
        if (start !== undefined) await this.stream(res, start, parsed.query, request, abort);
        return;
      }
      // Held while the store is read and the page written, not while a long-poll waits (those
      // count against the waits): with maxPageBytes it bounds the memory of one token's pages.
      if (!this.takeSlot(res, request, 'pages')) return;
      const pageSlot = once(() => request.slots.pages.release(request.reader.key));
      try {
        const start = await this.position(res, parsed.query);
        if (start !== undefined) await this.page(res, start, parsed.query, request, abort.signal, pageSlot);
      } finally {
        pageSlot();
      }
    })();
    served
      .catch((error: unknown) => {
        // What the store says can name the database, its host and role: it goes to the log, not to
        // a token holder (a tenant's consumer).
        this.logger?.warn(
          { err: describeError(error), code: 'journal-unavailable' },
          'the feed could not read the journal',
        );
        if (!res.headersSent)
          sendProblem(
            res,
            503,
            'journal-unavailable',
            'Journal unavailable',
            'the journal could not be read; try again shortly (the daemon log says why)',
            {},
            { 'retry-after': '5' },
          );
        else res.destroy();
      })
      .finally(() => this.open.delete(abort));
  }

  /** Takes one of the token's slots of `kind`, or answers 429 and returns false. */
  private takeSlot(res: ServerResponse, request: FeedRequest, kind: 'pages' | 'waits' | 'streams'): boolean {
    if (request.slots[kind].acquire(request.reader.key)) return true;
    const limit = request.slots[kind].perToken;
    const [type, title, detail] =
      kind === 'pages'
        ? ([
            'too-many-pages',
            'Too many page requests',
            `this token has ${limit} page requests being answered (feed.maxPagesPerToken); wait for one to finish`,
          ] as const)
        : kind === 'waits'
          ? ([
              'too-many-waits',
              'Too many waiting requests',
              `this token holds ${limit} waiting long-polls (feed.maxStreamsPerToken); wait for one to answer first`,
            ] as const)
          : ([
              'too-many-streams',
              'Too many streams',
              `this token holds ${limit} open streams (feed.maxStreamsPerToken); close one first`,
            ] as const);
    sendProblem(res, 429, type, title, detail, {}, { 'retry-after': kind === 'pages' ? '1' : '5' });
    return false;
  }

  /** Where a request starts reading, or undefined once it was answered 410. */
  private async position(res: ServerResponse, query: FeedQuery): Promise<number | undefined> {
    const pruned = await this.journal.prunedThrough();
    if (query.after === undefined) return pruned;
    const head = await this.journal.head();
    if (query.after >= pruned && query.after <= head) return query.after;
    const cursor = formatCursor(query.after);
    const detail =
      query.after < pruned
        ? `events after cursor ${cursor} were pruned (journal.retentionDays): this consumer missed events. ` +
          `The oldest complete cursor is ${formatCursor(pruned)}; re-sync from the service, then continue from it`
        : `cursor ${cursor} is ahead of this journal (last ${formatCursor(head)}): the store was reset or the ` +
          'cursor belongs to another daemon; re-sync, then continue from the oldest cursor';
    sendProblem(res, 410, 'cursor-gone', 'Cursor no longer available', detail, { oldestCursor: formatCursor(pruned) });
    return undefined;
  }

  private async page(
    res: ServerResponse,
    start: number,
    query: FeedQuery,
    request: FeedRequest,
    abort: AbortSignal,
    releasePageSlot: () => void,
  ): Promise<void> {
    const filter = { log: query.log, type: query.type, maxBytes: this.config.maxPageBytes };
    let generation = this.signal.generation;
    let page = await this.journal.page(start, query.limit, filter);
    // A filter that rarely matches: look further, a bounded stretch per request; an empty page
    // that did not reach the head answers at once with the cursor where the search stopped.
    for (let stretch = 1; page.events.length === 0 && !page.reachedHead && stretch < SCAN_STRETCHES; stretch++)
      page = await this.journal.page(page.next, query.limit, filter);
    const waits = page.events.length === 0 && page.reachedHead && query.waitMs > 0;
    if (waits && !this.takeSlot(res, request, 'waits')) return;
    if (waits) releasePageSlot();
    try {
      const deadline = this.clock.now() + query.waitMs;
      while (page.events.length === 0 && page.reachedHead && !abort.aborted && this.clock.now() < deadline) {
        await this.signal.next(deadline - this.clock.now(), abort, generation);
        generation = this.signal.generation;
        if (!abort.aborted) page = await this.journal.page(page.next, query.limit, filter);
      }
    } finally {
      if (waits) request.slots.waits.release(request.reader.key);
    }
    // The client left. A wait cut short by close() (the tenant stopped here: handed over, removed)
    // still answers, with what it has: the client asks again and meets the tenant's new holder.
    if (res.destroyed) return;
    const next = formatCursor(page.next);
    // The stored JSON with one attribute added at the end: `sequence` (CloudEvents Sequence extension).
    const body = `[${page.events.map((e) => `${e.payload.slice(0, -1)},"sequence":"${formatCursor(e.seq)}"}`).join(',')}]`;
    res.writeHead(200, {
      'content-type': `${PAGE_CONTENT_TYPE}; charset=utf-8`,
      'content-length': String(Buffer.byteLength(body)),
      'cache-control': 'no-store',
      link: `<${nextUrl(request.pagePath, next, query)}>; rel="next"`,
      'changefeed-cursor': next,
    });
    // Written under the page's slot, until the client has taken it: a page ended at once sits in
    // the response's buffer, its slot free, for as long as the client leaves it unread. Not cut
    // short by close(), which the page just written (an empty one after a wait) answers.
    await writeWithin(res, body, this.config.writeTimeoutSeconds * 1000);
    if (res.destroyed) return;
    res.end();
    this.observer?.feedEventsServed('page', page.events.length);
  }

  private async stream(
    res: ServerResponse,
    start: number,
    query: FeedQuery,
    request: FeedRequest,
    abort: AbortController,
  ): Promise<void> {
    if (!this.takeSlot(res, request, 'streams')) return;
    this.observer?.feedStreamOpened();
    try {
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        'x-accel-buffering': 'no',
      });
      // How long a client waits before reconnecting after the connection drops.
      res.write('retry: 1000\n\n');
      const options = {
        journal: this.journal,
        signal: this.signal,
        clock: this.clock,
        heartbeatMs: this.config.heartbeatSeconds * 1000,
        maxBytes: this.config.maxPageBytes,
        writeTimeoutMs: this.config.writeTimeoutSeconds * 1000,
        onServed: (count: number) => this.observer?.feedEventsServed('stream', count),
      };
      await streamEvents(res, start, query, options, abort.signal);
      res.end();
    } finally {
      request.slots.streams.release(request.reader.key);
      this.observer?.feedStreamClosed();
    }
  }
}

/** `action`, run the first time the returned function is called only. */
function once(action: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    action();
  };
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The request again, on the path it came by, continuing from `next`. */
function nextUrl(pagePath: string, next: string, query: FeedQuery): string {
  const params = new URLSearchParams({ after: next, limit: String(query.limit) });
  if (query.log) params.set('log', query.log);
  if (query.type) params.set('type', query.type);
  if (query.waitMs > 0) params.set('wait', String(query.waitMs / 1000));
  return `${pagePath}?${params.toString()}`;
}
