import type { Writable } from 'node:stream';
import { z } from 'zod';

/** How long a streamed answer's part may wait for its client to take it. Each listener describes its own. */
export const writeTimeoutSecondsSchema = z.number().int().min(1).max(3_600).default(30);

/**
 * UTF-16 units of a part handed to the response at a time, each under a deadline of its own. A
 * response says it took a write only once all of it left ('drain'), so a deadline on a whole part
 * would cut off a client reading steadily but slower than the part's size per deadline; a slice
 * of 64 Ki units asks a few kilobytes a second.
 */
const SLICE_UNITS = 65_536;

/**
 * Writes `part` to a streamed answer and resolves once the response takes more (at once while its
 * buffer has room), or once it is gone. A client that stops reading would otherwise hold the
 * answer and its slot for ever: a slice not taken within `timeoutMs` destroys the response, and
 * the writer finds `res.destroyed` and stops; a client that keeps taking slices keeps its answer.
 * `abort` (the feed closing) ends the wait at once, the rest unsent, so a slow client does not
 * hold the close for a deadline.
 */
export async function writeWithin(res: Writable, part: string, timeoutMs: number, abort?: AbortSignal): Promise<void> {
  for (let from = 0; from < part.length && !res.destroyed && !abort?.aborted;) {
    let to = Math.min(part.length, from + SLICE_UNITS);
    // Never between the halves of a surrogate pair: each half alone would be sent as U+FFFD.
    if (to < part.length && isHighSurrogate(part.charCodeAt(to - 1))) to++;
    const slice = from === 0 && to === part.length ? part : part.slice(from, to);
    from = to;
    if (!res.write(slice)) await takenWithin(res, timeoutMs, abort);
  }
}

/**
 * Resolves once the response took what it holds ('drain'), is gone, or `abort` fires; destroys it
 * after `timeoutMs` without.
 */
function takenWithin(res: Writable, timeoutMs: number, abort: AbortSignal | undefined): Promise<void> {
  if (res.destroyed || abort?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      res.off('drain', done);
      res.off('close', done);
      abort?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(() => {
      res.destroy();
      done();
    }, timeoutMs);
    res.on('drain', done);
    res.on('close', done);
    abort?.addEventListener('abort', done, { once: true });
  });
}

const isHighSurrogate = (unit: number): boolean => unit >= 0xd800 && unit <= 0xdbff;
