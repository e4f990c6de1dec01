import type { Logger } from 'pino';

/** A signal this soon after the first is the same request delivered twice. */
const DUPLICATE_SIGNAL_MS = 500;

/**
 * Two-stage shutdown: the first SIGINT/SIGTERM asks `stop` to drain and exit 0; a second signal,
 * or `timeoutMs` passing first, exits 1 at once. Either way the store is consistent: every event
 * not acknowledged by a sink is still pending and is delivered after the restart.
 */
export function onShutdownSignals(stop: () => Promise<void>, logger: Logger, timeoutMs: number): void {
  let firstAt: number | undefined;
  const handler = (signal: NodeJS.Signals): void => {
    if (firstAt !== undefined) {
      // Ctrl-C under `npm run` reaches the daemon twice at once: from the terminal (the whole
      // process group) and forwarded by npm. That is one request to stop, not two.
      if (performance.now() - firstAt < DUPLICATE_SIGNAL_MS) return;
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    firstAt = performance.now();
    logger.info({ signal, timeoutMs }, 'shutting down: finishing in-flight work');
    const timer = setTimeout(() => {
      logger.error({ timeoutMs }, 'shutdown timed out: exiting now');
      process.exit(1);
    }, timeoutMs);
    timer.unref();
    stop().then(
      () => {
        clearTimeout(timer);
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
}

/**
 * Waits until a long-running command is asked to stop, stops it and resolves with its exit code.
 * In-process (`signal` given) the caller stops it by aborting; the executable gives none, and the
 * command then stops on SIGINT/SIGTERM as above and exits the process (the promise never resolves).
 */
export function untilStopped(
  signal: AbortSignal | undefined,
  stop: () => Promise<void>,
  logger: Logger,
  timeoutMs: number,
): Promise<number> {
  if (!signal) {
    onShutdownSignals(stop, logger, timeoutMs);
    return new Promise<number>(() => undefined);
  }
  return new Promise<number>((resolve, reject) => {
    const onAbort = (): void => {
      stop().then(() => resolve(0), reject);
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
}
