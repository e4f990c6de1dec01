import { subscribe } from 'node:diagnostics_channel';
import type { ManualClock } from './manualClock.js';

// HTTP requests made through undici (the service client, the webhook sink, the CLI) that have not
// ended yet. undici publishes these channels for every request; the in-process simulator and
// webhook receiver answer over loopback, so a request in flight is work that time must wait for.
// Requests always end on their own: their timeouts run on real timers, not on the ManualClock.
const requestsInFlight = new Set<unknown>();
subscribe('undici:request:create', (message) => requestsInFlight.add((message as { request: unknown }).request));
const ended = (message: unknown): void => void requestsInFlight.delete((message as { request: unknown }).request);
subscribe('undici:request:trailers', ended);
subscribe('undici:request:error', ended);

// Pending file system calls, socket connects and writes, DNS lookups and queued setImmediate
// callbacks, as Node lists them; timers are left out (keep-alive sockets hold them for seconds).
const BUSY_RESOURCE = /^(FSReq|FileHandleCloseReq|GetAddrInfoReqWrap|ConnectWrap|WriteWrap|ShutdownWrap|Immediate$)/;

/** One turn of the event loop: every I/O callback and immediate queued before it has run. */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
/** Lets the process sleep until I/O arrives, instead of spinning; how long is not the point. */
const pause = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 1));

/**
 * Whether everything in this process now waits on the clock: no HTTP request in flight, no file
 * or socket operation pending, no callback queued. Checked on two turns in a row, because the
 * callback of one I/O step may start the next only on the following turn. Idle turns are bare
 * event-loop turns (a daemon wakes several times a virtual second, so a timer per check would
 * cost more than the work); only while something is pending does the check sleep.
 */
async function waitUntilIdle(isSettled: () => boolean): Promise<void> {
  let idleTurns = 0;
  while (idleTurns < 2 && !isSettled()) {
    await nextTurn();
    const busy = requestsInFlight.size > 0 || process.getActiveResourcesInfo().some((name) => BUSY_RESOURCE.test(name));
    if (!busy) idleTurns += 1;
    else {
      idleTurns = 0;
      await pause();
    }
  }
}

/**
 * Runs `work` on a ManualClock: whenever nothing in the process is doing anything but wait on the
 * clock (no HTTP request in flight, no pending I/O), the clock jumps to the next sleeper's
 * wake-up. Lets a test cover an hour of budget pacing or a Retry-After in a second, while HTTP
 * still goes over real sockets. Idleness is judged by what is pending, not by how long the process
 * has been quiet, so a slow or busy machine never makes time jump under a request in flight.
 */
export async function withVirtualTime<T>(
  clock: ManualClock,
  work: Promise<T>,
  options: { maxVirtualMs?: number } = {},
): Promise<T> {
  let settled = false;
  const guarded = work.finally(() => {
    settled = true;
  });
  const start = clock.now();
  const limit = options.maxVirtualMs ?? 24 * 3_600_000;
  while (!settled) {
    await waitUntilIdle(() => settled);
    if (settled) break;
    const next = clock.nextWakeAt();
    if (next !== undefined) {
      if (next - start > limit) throw new Error(`virtual time passed its limit of ${limit} ms`);
      await clock.advanceTo(next);
    } else {
      await pause(); // waiting on something outside the clock, such as a real timer
    }
  }
  return guarded;
}
