import { PassThrough } from 'node:stream';
import { main } from '../../src/cli/main.js';
import { until } from './daemonProcess.js';

export interface CliResult {
  status: number;
  stdout: string;
  stderr: string;
}

/** A stream whose text is kept. */
function capture(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return { stream, text: () => text };
}

/**
 * Runs a `changefeed` command in this process (main with captured stdout and stderr), with the
 * environment of this process plus `env`, as test/support/daemonProcess.ts's spawning `runCli`
 * does: CHANGEFEED_CONFIG is cleared so a developer's own setting never leaks in. A long-running
 * command stops when `signal` aborts; it is always given one, so no command installs handlers for
 * this process's signals or errors.
 */
export async function runCliInProcess(
  args: string[],
  env: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<CliResult> {
  const stdout = capture();
  const stderr = capture();
  const status = await main(args, {
    stdout: stdout.stream,
    stderr: stderr.stream,
    env: { ...process.env, CHANGEFEED_CONFIG: '', ...env },
    signal: signal ?? new AbortController().signal,
  });
  // The 'data' handlers run on the next tick of the stream.
  await new Promise((resolve) => setImmediate(resolve));
  return { status, stdout: stdout.text(), stderr: stderr.text() };
}

/** A long-running command (`run`, `receive`, `simulate`) in this process, its output readable as it runs. */
export interface InProcessCommand {
  /** What it has written to stdout so far. */
  readonly stdout: () => string;
  /** What it has written to stderr so far: messages and, for `run`, the log lines. */
  readonly logs: () => string;
  /** Resolves once a log line contains `text`; fails if the command exits first. */
  waitForLog(text: string, timeoutMs?: number): Promise<void>;
  /** Aborts the command (as SIGTERM does the executable) and resolves with its exit code once it has drained. */
  stop(): Promise<number>;
  /** The command's exit code once it ends by itself or after stop(). */
  exited(): Promise<number>;
}

/** Starts `changefeed <args>` in this process, as runCliInProcess does, without waiting for it to end. */
export function startCliInProcess(args: string[], env: Record<string, string> = {}): InProcessCommand {
  const stdout = capture();
  const stderr = capture();
  const stop = new AbortController();
  let ended = false;
  const exit = main(args, {
    stdout: stdout.stream,
    stderr: stderr.stream,
    env: { ...process.env, CHANGEFEED_CONFIG: '', CHANGEFEED_API_KEY: '', ...env },
    signal: stop.signal,
  }).finally(() => (ended = true));
  return {
    stdout: stdout.text,
    logs: stderr.text,
    waitForLog: async (text, timeoutMs = 15_000) => {
      await until(() => ended || stderr.text().includes(text), timeoutMs, `log line "${text}"`);
      if (!stderr.text().includes(text))
        throw new Error(`exited before logging "${text}"; it logged:\n${stderr.text().slice(-4000)}`);
    },
    stop: () => {
      stop.abort();
      return exit;
    },
    exited: () => exit,
  };
}
