import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock } from '../clock.js';
import { readSecretFile } from '../secrets/readSecretFile.js';
import { ConfigError } from '../errors.js';
import { registerSecret } from '../secrets/secretRegistry.js';
import type { JournalStore } from '../store/changefeedStore.js';
import { streamEvents } from './eventStream.js';
import type { FeedConfig } from './feedConfig.js';
import { formatCursor } from './feedCursor.js';
import type { FeedObserver } from './feedObserver.js';
import { sendProblem } from './feedProblem.js';
import { parseFeedQuery, type FeedQuery } from './feedQuery.js';
import { withinPageBytes } from './pageBytes.js';
import { FeedTokens, StreamSlots } from './feedTokens.js';
import { JournalSignal } from './journalSignal.js';

export const PAGE_CONTENT_TYPE = 'application/cloudevents-batch+json';
/** Stretches of the journal (MAX_SCAN_POSITIONS each) one page request looks through at most. */
const SCAN_STRETCHES = 10;

/**
 * The journal over HTTP, for consumers that cannot run a broker or expose a webhook:
 *
 * - `GET /v1/events?after=&limit=&log=&type=&wait=`: a page of CloudEvents in ingestion order
 *   (`application/cloudevents-batch+json`, a JSON array), each with the CloudEvents `sequence`
 *   extension attribute holding its cursor; the cursor to continue from in a `Link: <...>;
 *   rel="next"` header and in `Changefeed-Cursor`. An empty page when nothing is new, or with
 *   `wait` seconds it waits for the first new event (long-polling).
 * - `GET /v1/events/stream`: the same as Server-Sent Events, resumed with Last-Event-ID.
 *
 * A position older than what pruning kept answers 410 with the oldest complete cursor. Every
 * request needs one of the configured bearer tokens.
 */
export class EventFeed {
  private readonly tokens: FeedTokens;
  private readonly slots: StreamSlots;
  /** Long-polls waiting per token: each holds a connection for up to maxWaitSeconds, like a stream. */
  private readonly waitSlots: StreamSlots;
  private readonly signal: JournalSignal;
  private readonly open = new Set<AbortController>();

  constructor(
    private readonly config: FeedConfig,
    private readonly journal: JournalStore,
    private readonly clock: Clock,
    private readonly observer?: FeedObserver,
  ) {
    const tokens = [...config.tokens, ...config.tokenFiles.map((file) => readSecretFile(file))];
    if (tokens.length === 0)
      throw new ConfigError('feed.enabled needs at least one bearer token in feed.tokens or feed.tokenFiles', [
        { path: 'feed.tokens', message: 'add a token (at least 16 characters), e.g. from ${FEED_TOKEN}' },
      ]);
    for (const token of tokens) registerSecret(token);
    const unusable = config.tokenFiles.find(
      (_, i) => !/^[\x21-\x7e]{16,}$/.test(tokens[config.tokens.length + i] ?? ''),
    );
    if (unusable !== undefined)
      throw new ConfigError(`the token in ${unusable} cannot be sent in a header`, [
        { path: 'feed.tokenFiles', message: 'write at least 16 printable ASCII characters without spaces' },
      ]);
    this.tokens = new FeedTokens(tokens);
    this.slots = new StreamSlots(config.maxStreamsPerToken);
    this.waitSlots = new StreamSlots(config.maxStreamsPerToken);
    this.signal = new JournalSignal(clock);
  }

  /** Events were appended to the journal: wake long-polls and streams. */
  notify(): void {
    this.signal.notify();
  }

  /** Ends every open stream and long-poll; the server closes their connections. */
  close(): void {
    for (const abort of this.open) abort.abort();
  }

  /** Serves /v1/events and /v1/events/stream; false for every other path. */
  handle(req: IncomingMessage, res: ServerResponse): boolean {
    // The parser passes request targets URL refuses (`GET http://[ HTTP/1.1`); a throw here would
    // escape the server's request listener and end the daemon. Not a feed path, then.
    const target = req.url ?? '/';
    if (!URL.canParse(target, 'http://feed')) return false;
    const url = new URL(target, 'http://feed');
    const mode = url.pathname === '/v1/events' ? 'page' : url.pathname === '/v1/events/stream' ? 'stream' : undefined;
    if (mode === undefined) return false;
    const observer = this.observer;
    // 'close' comes however the response ends: answered, or the client gone before an answer.
    if (observer) res.once('close', () => observer.feedAnswered(mode, res.headersSent ? res.statusCode : undefined));
    if (req.method !== 'GET' && !(mode === 'page' && req.method === 'HEAD')) {
      sendProblem(
        res,
        405,
        'method-not-allowed',
        'Method not allowed',
        'the feed is read with GET',
        {},
        { allow: 'GET' },
      );
      return true;
    }
    const token = this.tokens.match(req.headers.authorization);
    if (token < 0) {
      sendProblem(
        res,
        401,
        'unauthorized',
        'Unauthorized',
        'send one of the tokens of feed.tokens or feed.tokenFiles as "Authorization: Bearer <token>"',
        {},
        { 'www-authenticate': 'Bearer realm="changefeed"' },
      );
      return true;
    }
    const lastEventId = mode === 'stream' ? header(req, 'last-event-id') : undefined;
    const parsed = parseFeedQuery(url.searchParams, this.config, mode, lastEventId);
    if ('invalid' in parsed) {
      const { name, reason } = parsed.invalid;
      sendProblem(res, 400, 'invalid-parameter', `Invalid parameter ${name}`, `${name}: ${reason}`, {
        'invalid-params': [{ name, reason }],
      });
      return true;
    }
    const abort = new AbortController();
    res.once('close', () => abort.abort());
    this.open.add(abort);
    const served = (async () => {
      const start = await this.position(res, parsed.query);
      if (start === undefined) return;
      if (mode === 'page') await this.page(res, start, parsed.query, token, abort.signal);
      else await this.stream(res, start, parsed.query, token, abort);
    })();
    served
      .catch((error: unknown) => {
        if (!res.headersSent)
          sendProblem(res, 503, 'journal-unavailable', 'Journal unavailable', (error as Error).message);
        else res.destroy();
      })
      .finally(() => this.open.delete(abort));
    return true;
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
    token: number,
    abort: AbortSignal,
  ): Promise<void> {
    const filter = { log: query.log, type: query.type };
    let generation = this.signal.generation;
    let page = await this.journal.page(start, query.limit, filter);
    // A filter that rarely matches: look further, a bounded stretch per request; an empty page
    // that did not reach the head answers at once with the cursor where the search stopped.
    for (let stretch = 1; page.events.length === 0 && !page.reachedHead && stretch < SCAN_STRETCHES; stretch++)
      page = await this.journal.page(page.next, query.limit, filter);
    const waits = page.events.length === 0 && page.reachedHead && query.waitMs > 0;
    if (waits && !this.waitSlots.acquire(token)) {
      sendProblem(
        res,
        429,
        'too-many-waits',
        'Too many waiting requests',
        `this token holds ${this.config.maxStreamsPerToken} waiting long-polls (feed.maxStreamsPerToken); ` +
          'wait for one to answer first',
        {},
        { 'retry-after': '5' },
      );
      return;
    }
    try {
      const deadline = this.clock.now() + query.waitMs;
      while (page.events.length === 0 && page.reachedHead && !abort.aborted && this.clock.now() < deadline) {
        await this.signal.next(deadline - this.clock.now(), abort, generation);
        generation = this.signal.generation;
        if (!abort.aborted) page = await this.journal.page(page.next, query.limit, filter);
      }
    } finally {
      if (waits) this.waitSlots.release(token);
    }
    if (abort.aborted) return;
    const events = withinPageBytes(page.events);
    const last = events[events.length - 1];
    const next = formatCursor(events.length < page.events.length && last ? last.seq : page.next);
    // The stored JSON with one attribute added at the end: `sequence` (CloudEvents Sequence extension).
    const body = `[${events.map((e) => `${e.payload.slice(0, -1)},"sequence":"${formatCursor(e.seq)}"}`).join(',')}]`;
    res
      .writeHead(200, {
        'content-type': `${PAGE_CONTENT_TYPE}; charset=utf-8`,
        'cache-control': 'no-store',
        link: `<${nextUrl(next, query)}>; rel="next"`,
        'changefeed-cursor': next,
      })
      .end(body);
    this.observer?.feedEventsServed('page', events.length);
  }

  private async stream(
    res: ServerResponse,
    start: number,
    query: FeedQuery,
    token: number,
    abort: AbortController,
  ): Promise<void> {
    if (!this.slots.acquire(token)) {
      sendProblem(
        res,
        429,
        'too-many-streams',
        'Too many streams',
        `this token holds ${this.config.maxStreamsPerToken} open streams (feed.maxStreamsPerToken); close one first`,
        {},
        { 'retry-after': '5' },
      );
      return;
    }
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
        onServed: (count: number) => this.observer?.feedEventsServed('stream', count),
      };
      await streamEvents(res, start, query, options, abort.signal);
      res.end();
    } finally {
      this.slots.release(token);
      this.observer?.feedStreamClosed();
    }
  }
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The request again, continuing from `next`. */
function nextUrl(next: string, query: FeedQuery): string {
  const params = new URLSearchParams({ after: next, limit: String(query.limit) });
  if (query.log) params.set('log', query.log === 'identityProvider' ? 'identity_provider' : query.log);
  if (query.type) params.set('type', query.type);
  if (query.waitMs > 0) params.set('wait', String(query.waitMs / 1000));
  return `/v1/events?${params.toString()}`;
}
