import { isatty } from 'node:tty';
import { pino, type LogFn } from 'pino';
import type PinoPretty from 'pino-pretty';
import { ConfigError } from '../errors.js';
import { requireOnDemand } from '../loadOnDemand.js';
import { redactLogValue, serializeError } from './redactLogValue.js';
import { scrubSecrets } from '../secrets/secretRegistry.js';

export type Logger = pino.Logger;

export interface LoggerOptions {
  /** trace, debug, info, warn, error, fatal or silent; default: $CHANGEFEED_LOG_LEVEL, else info. */
  level?: string;
  /** Human-readable lines instead of JSON, for a terminal. */
  pretty?: boolean;
  /** A stream, or a file descriptor; default 2 (stderr), so stdout stays free for the stdout sink. */
  destination?: NodeJS.WritableStream | number;
  /** Where CHANGEFEED_LOG_LEVEL is read when `level` is not given; default `process.env`. */
  env?: NodeJS.ProcessEnv;
}

const LEVELS = [...Object.keys(pino.levels.values), 'silent'];

/**
 * The daemon's logger: JSON lines on stderr, or pretty lines when asked. Secrets are kept out
 * of every line by the mechanisms pino documents, so no call site has to remember:
 * - keys that name credentials (`apiKey`, `Authorization`, `x-api-key`, ... in any case and
 *   at any depth) are replaced by `[redacted]`, and strings registered with `registerSecret`
 *   are cut out of every string: in the logged object (`formatters.log`, which also serializes
 *   errors found at any depth), in `%o`-style arguments (`hooks.logMethod`) and, once more, in
 *   the finished line (`hooks.streamWrite`), which is the only place that sees child bindings,
 *   `setBindings` and `msgPrefix`;
 * - the `err` serializer scrubs error messages and stacks.
 * pino's own `redact` option is not used: it runs after `formatters.log`, so it could only ever
 * find values already redacted (and its wildcard paths would make each log call several times slower).
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? (options.env ?? process.env).CHANGEFEED_LOG_LEVEL ?? 'info';
  if (!LEVELS.includes(level)) {
    const source = options.level === undefined ? `CHANGEFEED_LOG_LEVEL=${level}` : `log level "${level}"`;
    const path = options.level === undefined ? 'CHANGEFEED_LOG_LEVEL' : 'log.level';
    throw new ConfigError(`${source} is not a log level; use one of ${LEVELS.join(', ')}`, [
      { path, message: `unknown log level "${level}"` },
    ]);
  }
  const destination = options.destination ?? 2;

  return pino(
    {
      level,
      serializers: { err: serializeError },
      formatters: { log: (object) => redactLogValue(object) as Record<string, unknown> },
      hooks: { logMethod: scrubLogArguments, streamWrite: redactLine },
    },
    options.pretty ? prettyStream(destination) : rawStream(destination),
  );
}

// Interpolation arguments become text inside `msg` before any later step sees them, where a
// credential-named key can no longer be found; redact them while they are still objects.
function scrubLogArguments(this: Logger, args: Parameters<LogFn>, method: LogFn): void {
  const [first, ...rest] = args as unknown[];
  method.apply(this, [first, ...rest.map((arg) => redactLogValue(arg))] as Parameters<LogFn>);
}

// pino serializes child bindings once, in child() or setBindings(), without formatters.log, and
// fills `msg` (from the message, msgPrefix or an error's own message) after logMethod: the written
// line is the one place that holds all of it. Parsing it again costs about 2 µs a line. Scrubbing
// here rather than in child() also covers a secret registered after the child was created.
function redactLine(line: string): string {
  try {
    return `${JSON.stringify(redactLogValue(JSON.parse(line)))}\n`;
  } catch {
    return scrubSecrets(line); // never throw from a log call; the registered secrets still go
  }
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
  // Required here, synchronously, and only for log.pretty: a JSON logger never loads it.
  const { prettyFactory } = requireOnDemand<typeof PinoPretty>(
    'pino-pretty',
    (reason) =>
      new ConfigError(
        `log.pretty needs the package pino-pretty, which cannot be loaded (${reason}); reinstall changefeed, ` +
          'or set log.pretty: false for JSON lines',
        [{ path: 'log.pretty', message: 'pino-pretty cannot be loaded' }],
      ),
  );
  const prettify = prettyFactory({ colorize });
  const target = rawStream(destination);
  return { write: (line: string) => target.write(prettify(line)) };
}
