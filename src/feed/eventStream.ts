import type { ServerResponse } from 'node:http';
import type { Clock } from '../clock.js';
import type { JournalStore } from '../store/changefeedStore.js';
import { formatCursor } from './feedCursor.js';
import type { FeedQuery } from './feedQuery.js';
import type { JournalSignal } from './journalSignal.js';
import { writeWithin } from '../writeWithin.js';

/** Events read (and written to the socket) at a time while a stream catches up. */
const STREAM_PAGE = 500;

export interface StreamOptions {
  journal: JournalStore;
  signal: JournalSignal;
  clock: Clock;
  heartbeatMs: number;
  /** Most bytes of events one read (and one write) holds: STREAM_PAGE large events would be one huge string. */
  maxBytes: number;
  /** A part the client takes none of for this long ends the stream (writeWithin). */
  writeTimeoutMs: number;
  /** Events written to the response, after each write. */
  onServed?: (count: number) => void;
}

/**
 * Writes the journal after `start` to a Server-Sent Events response until `abort` fires: each
 * event as `id: <cursor>` and `data: <CloudEvent JSON>` (the stored JSON, one line), then waits
 * for new events, sending a comment line when idle for `heartbeatMs`. A reconnect that sends the
 * last `id` as Last-Event-ID resumes right after it: nothing lost, nothing repeated.
 */
export async function streamEvents(
  res: ServerResponse,
  start: number,
  query: FeedQuery,
  options: StreamOptions,
  abort: AbortSignal,
): Promise<void> {
  const { journal, signal, clock, heartbeatMs } = options;
  const filter = { log: query.log, type: query.type, maxBytes: options.maxBytes };
  let cursor = start;
  let lastWriteAt = clock.now();
  while (!abort.aborted) {
    const generation = signal.generation;
    const page = await journal.page(cursor, STREAM_PAGE, filter);
    const { events } = page;
    cursor = page.next;
    if (page.events.length === 0 && !page.reachedHead) {
      // A filter that rarely matches, far behind: go on looking, letting others run in between.
      await new Promise((resolve) => setImmediate(resolve));
      continue;
    }
    if (events.length > 0) {
      let chunk = '';
      for (const event of events) chunk += `id: ${formatCursor(event.seq)}\ndata: ${event.payload}\n\n`;
      lastWriteAt = clock.now();
      const taken = writeWithin(res, chunk, options.writeTimeoutMs, abort);
      options.onServed?.(events.length);
      await taken;
      // Let the other streams and the daemon's loops run between pages of a long catch-up.
      await new Promise((resolve) => setImmediate(resolve));
      continue;
    }
    const idleMs = clock.now() - lastWriteAt;
    if (idleMs >= heartbeatMs) {
      await writeWithin(res, ': heartbeat\n\n', options.writeTimeoutMs, abort);
      lastWriteAt = clock.now();
    }
    await signal.next(heartbeatMs - (clock.now() - lastWriteAt), abort, generation);
  }
}
