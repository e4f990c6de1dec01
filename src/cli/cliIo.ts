import type { LoggerOptions } from '../observe/createLogger.js';

/**
 * What a command reads and writes besides its arguments: the process's own streams and
 * environment in the executable (src/cli/changefeed.ts), captured ones when `main` runs in-process.
 */
export interface CliIo {
  stdout: NodeJS.WritableStream;
  /** Messages and, for the commands that log, the log lines. */
  stderr: NodeJS.WritableStream;
  /** Read for CHANGEFEED_* variables and `${VAR}` references in the config. */
  env: NodeJS.ProcessEnv;
  /**
   * Stops a long-running command (`run`, `demo`, `simulate`, `receive`) in-process: it drains and
   * resolves with its exit code. Without it the command owns the process: SIGINT/SIGTERM stop it
   * (a second signal exits at once) and an error escaping every loop exits the process.
   */
  signal?: AbortSignal;
}

/** The process's own streams and environment. */
export function processIo(): CliIo {
  return { stdout: process.stdout, stderr: process.stderr, env: process.env };
}

/**
 * Where a command's logger writes: file descriptor 2 for the process's own stderr (synchronous, so
 * a crash's last line is out before the exit), else the stream given.
 */
export function logDestination(io: CliIo): NonNullable<LoggerOptions['destination']> {
  return io.stderr === process.stderr ? 2 : io.stderr;
}

export function writeLine(stream: NodeJS.WritableStream, line: string): void {
  stream.write(`${line}\n`);
}
