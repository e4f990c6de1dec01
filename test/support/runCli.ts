import { PassThrough } from 'node:stream';
import { main } from '../../src/cli/main.js';

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
