import type { Logger } from 'pino';
import { describeError } from '../errors.js';

/** The line a supervisor (and the tests) look for: an error escaped every loop's own route. */
export const FATAL_MESSAGE = 'an error escaped its loop; exiting so that a supervisor restarts the process';

/**
 * The process's last resort for `run`: an unhandled rejection or an uncaught exception is logged
 * at fatal (synchronously, so the line is out) and the process exits 1. Every loop has its own
 * error route, so reaching this is a bug, and a supervisor's restart beats a daemon whose loops
 * may have died silently. Returns the uninstaller.
 */
export function exitOnEscapedErrors(
  logger: Logger,
  exit: (code: number) => void = (code) => process.exit(code),
): () => void {
  const fatal =
    (origin: 'unhandledRejection' | 'uncaughtException') =>
    (error: unknown): void => {
      const stack = error instanceof Error ? error.stack : undefined;
      logger.fatal({ err: describeError(error), stack, origin }, FATAL_MESSAGE);
      exit(1);
    };
  const onRejection = fatal('unhandledRejection');
  const onException = fatal('uncaughtException');
  process.on('unhandledRejection', onRejection);
  process.on('uncaughtException', onException);
  return () => {
    process.off('unhandledRejection', onRejection);
    process.off('uncaughtException', onException);
  };
}
