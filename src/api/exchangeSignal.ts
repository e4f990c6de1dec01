/**
 * The signal of one exchange with the service: aborted when the caller's signal aborts or when
 * `timeoutMs` has passed (a DOMException named TimeoutError, as AbortSignal.timeout gives), and
 * untied from both by `clear()` when the exchange is over. Not AbortSignal.timeout: its timer and
 * signal live out the whole limit after every request, each holding a WeakRef (at 1,250
 * requests a second and the default 15 s, about 19,000 of each at any time); not
 * AbortSignal.any, which leaves an entry on the caller's long-lived signal for good on Node 20
 * (nodejs/node#55351).
 */
export function exchangeSignal(
  caller: AbortSignal | undefined,
  timeoutMs: number,
): { readonly signal: AbortSignal; clear(): void } {
  const controller = new AbortController();
  const onAbort = (): void => controller.abort(caller?.reason);
  const timer = setTimeout(
    () => controller.abort(new DOMException(`timed out after ${timeoutMs} ms`, 'TimeoutError')),
    timeoutMs,
  );
  // As AbortSignal.timeout's: an exchange in flight holds the process open by its socket, not its timer.
  timer.unref();
  if (caller?.aborted) controller.abort(caller.reason);
  else caller?.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    clear: () => {
      clearTimeout(timer);
      caller?.removeEventListener('abort', onAbort);
    },
  };
}
