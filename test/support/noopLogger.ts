import { pino, type Logger } from 'pino';

/** A logger that discards everything, for the components a test or bench runs without one. */
export const noopLogger: Logger = pino({ enabled: false });
