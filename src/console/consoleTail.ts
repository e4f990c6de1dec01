import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock } from '../clock.js';
import { streamEvents } from '../feed/eventStream.js';
import { parseCursor } from '../feed/feedCursor.js';
import { JournalSignal } from '../feed/journalSignal.js';
import type { ChangefeedStore } from '../store/changefeedStore.js';
import { CONSOLE_CSP } from './consoleRequests.js';

/** A live tail reads the journal again this often: the holder's appends notify only its own feed. */
const TAIL_REREAD_MS = 2_000;
/** Events a tail shows from before it opened. */
const TAIL_BACKLOG = 20;
const TAIL_MAX_BYTES = 1_048_576;

/**
 * A tenant's journal as Server-Sent Events for the console's live tail, through the feed's own
 * stream (eventStream.ts): from a few events back, or after the Last-Event-ID an EventSource
 * sends when it reconnects, optionally of one type glob, until `abort`. Its JournalSignal is
 * never notified (appends on another replica would not reach it), so it reads again on its timer.
 */
export async function streamTail(
  req: IncomingMessage,
  res: ServerResponse,
  store: ChangefeedStore,
  type: string | undefined,
  { clock, writeTimeoutMs }: { clock: Clock; writeTimeoutMs: number },
  abort: AbortSignal,
): Promise<void> {
  const lastEventId = req.headers['last-event-id'];
  const resumeAt = typeof lastEventId === 'string' ? parseCursor(lastEventId) : undefined;
  const pruned = await store.journal.prunedThrough();
  const start = Math.max(pruned, resumeAt ?? (await store.journal.head()) - TAIL_BACKLOG);
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-accel-buffering': 'no',
    'content-security-policy': CONSOLE_CSP,
  });
  res.write(`retry: ${TAIL_REREAD_MS}\n\n`);
  const query = { after: start, limit: 100, log: undefined, type, waitMs: 0 };
  const options = {
    journal: store.journal,
    signal: new JournalSignal(clock),
    clock,
    heartbeatMs: TAIL_REREAD_MS,
    maxBytes: TAIL_MAX_BYTES,
    writeTimeoutMs,
  };
  await streamEvents(res, start, query, options, abort);
  res.end();
}
