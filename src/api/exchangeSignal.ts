import { EventEmitter } from 'node:events';

/**
 * What undici listens to for one exchange. undici takes an EventEmitter as a request's signal as
 * well as an AbortSignal (it reads `aborted` and `reason` and listens for 'abort'); an emitter is a
 * few fields where an AbortController is an EventTarget with two Maps built per request.
 */
class ExchangeAbort extends EventEmitter {
  aborted = false;
  reason: unknown = undefined;

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit('abort');
  }
}

/**
 * The signal of one exchange with the service: aborted when the caller's signal aborts or when
 * `timeoutMs` has passed (a DOMException named TimeoutError, as AbortSignal.timeout gives), and
 * untied from both by `clear()` when the exchange is over. Not AbortSignal.timeout: its timer and
 * signal outlive every request by the whole limit; not AbortSignal.any, which leaves an entry on
 * the caller's long-lived signal for good on Node 20 (nodejs/node#55351).
 */
export function exchangeSignal(
  caller: AbortSignal | undefined,
  timeoutMs: number,
): { readonly signal: ExchangeAbort; clear(): void } {
  const signal = new ExchangeAbort();
  const onAbort = (): void => signal.abort(caller?.reason);
  const timer = setTimeout(
    () => signal.abort(new DOMException(`timed out after ${timeoutMs} ms`, 'TimeoutError')),
    timeoutMs,
  );
  // As AbortSignal.timeout's: an exchange in flight holds the process open by its socket, not its timer.
  timer.unref();
  if (caller?.aborted) signal.abort(caller.reason);
  else caller?.addEventListener('abort', onAbort, { once: true });
  return {
    signal,
    clear: () => {
      clearTimeout(timer);
      caller?.removeEventListener('abort', onAbort);
    },
  };
}
