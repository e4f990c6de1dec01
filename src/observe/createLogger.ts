import { isatty } from 'node:tty';
import { pino, type LogFn } from 'pino';
import { prettyFactory } from 'pino-pretty';
import { ConfigError } from '../errors.js';
import { REDACTED, REDACT_PATHS, redactLogValue, serializeError } from './redactLogValue.js';
import { hasRegisteredSecrets, scrubSecrets } from '../secrets/secretRegistry.js';

export type Logger = pino.Logger;

export interface LoggerOptions {
  /** trace, debug, info, warn, error, fatal or silent; default: $CHANGEFEED_LOG_LEVEL, else info. */
  level?: string;
  /** Human-readable lines instead of JSON, for a terminal. */
  pretty?: boolean;
  /** A stream, or a file descriptor; default 2 (stderr), so stdout stays free for the stdout sink. */
  destination?: NodeJS.WritableStream | number;
}

const LEVELS = [...Object.keys(pino.levels.values), 'silent'];

/**
 * The daemon's logger: JSON lines on stderr, or pretty lines when asked. Secrets are kept out
 * of every line by three mechanisms, so no call site has to remember:
 * - keys that name credentials (`apiKey`, `Authorization`, `x-api-key`, ... in any case and
 *   at any depth) are replaced by `[redacted]` in logged objects, child bindings, errors and
 *   `%o`-style arguments;
 * - strings registered with `registerSecret` are cut out of every string, including messages
 *   and error messages and stacks;
 * - pino's own `redact` paths catch the common spellings once more.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? process.env.CHANGEFEED_LOG_LEVEL ?? 'info';
  if (!LEVELS.includes(level)) {
    const source = options.level === undefined ? `CHANGEFEED_LOG_LEVEL=${level}` : `log level "${level}"`;
    const path = options.level === undefined ? 'CHANGEFEED_LOG_LEVEL' : 'log.level';
    throw new ConfigError(`${source} is not a log level; use one of ${LEVELS.join(', ')}`, [
      { path, message: `unknown log level "${level}"` },
    ]);
  }
  const destination = options.destination ?? 2;

  const logger = pino(
    {
      level,
      redact: { paths: [...REDACT_PATHS], censor: REDACTED },
      serializers: { err: serializeError },
      formatters: { log: (object) => redactLogValue(object) as Record<string, unknown> },
      hooks: { logMethod: scrubLogArguments },
    },
    options.pretty ? prettyStream(destination) : rawStream(destination),
  );
  redactChildBindings(logger);
  return logger;
}

// pino serializes child bindings once, in child(), and deliberately skips formatters for them.
// Children are created with Object.create(parent), so wrapping the root's methods covers
// every descendant.
function redactChildBindings(logger: Logger): void {
  const { child, setBindings } = Object.getPrototypeOf(logger) as Pick<Logger, 'child' | 'setBindings'>;
  logger.child = function (this: Logger, bindings, childOptions) {
    return child.call(this, redactLogValue(bindings) as pino.Bindings, childOptions);
  } as Logger['child'];
  logger.setBindings = function (this: Logger, bindings) {
    setBindings.call(this, redactLogValue(bindings) as pino.Bindings);
  };
}

/** A logger that discards everything, for tests and for components used without one. */
export const noopLogger: Logger = pino({ enabled: false });

// The merging object (first argument) is handled by formatters.log; this covers the message
// and its interpolation arguments, which pino formats into `msg` without any formatter.
function scrubLogArguments(this: Logger, args: Parameters<LogFn>, method: LogFn): void {
  const [first, ...rest] = args as unknown[];
  const scrubbed: unknown[] = [typeof first === 'string' ? scrubSecrets(first) : first];
  for (const arg of rest) scrubbed.push(redactLogValue(arg));
  // Without a message pino uses the error's own message as `msg`; pass a scrubbed one instead.
  if (rest.length === 0 && hasRegisteredSecrets()) {
    const error = errorUsedAsMessage(first);
    if (error) scrubbed.push(scrubSecrets(error.message));
  }
  method.apply(this, scrubbed as Parameters<LogFn>);
}

function errorUsedAsMessage(first: unknown): Error | undefined {
  if (first instanceof Error) return first;
  if (typeof first !== 'object' || first === null) return undefined;
  const { err, msg } = first as { err?: unknown; msg?: unknown };
  return msg === undefined && err instanceof Error ? err : undefined;
}

function rawStream(destination: NodeJS.WritableStream | number): pino.DestinationStream {
  // Synchronous writes: a daemon that crashes must not lose the line that explains why.
  return typeof destination === 'number' ? pino.destination({ dest: destination, sync: true }) : destination;
}

function prettyStream(destination: NodeJS.WritableStream | number): pino.DestinationStream {
  const colorize =
    typeof destination === 'number' ? isatty(destination) : (destination as { isTTY?: boolean }).isTTY === true;
  // pino-pretty's formatter called inline rather than as a worker transport: every line is
  // written before the log call returns, so nothing is lost on exit and no thread is involved.
  const prettify = prettyFactory({ colorize });
  const target = rawStream(destination);
  return { write: (line: string) => target.write(prettify(line)) };
}
