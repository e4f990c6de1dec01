import type { ServerResponse } from 'node:http';
import { z } from 'zod';

/** How long a streamed answer's part may wait for its client to take it. Each listener describes its own. */
export const writeTimeoutSecondsSchema = z.number().int().min(1).max(3_600).default(30);

/**
 * Writes `part` to a streamed answer and resolves once the response takes more (at once while its
 * buffer has room), or once it is gone. A client that stops reading (connected, never reading
 * a `/metrics` scrape or an event stream) would otherwise hold the answer, its slot and what it
 * was sent for ever: a part not taken within `timeoutMs` destroys the response, and the writer
 * finds `res.destroyed` and stops.
 */
export function writeWithin(res: ServerResponse, part: string, timeoutMs: number): Promise<void> {
  if (res.destroyed) return Promise.resolve();
  if (res.write(part)) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    const timer = setTimeout(() => {
      res.destroy();
      done();
    }, timeoutMs);
    res.on('drain', done);
    res.on('close', done);
  });
}
