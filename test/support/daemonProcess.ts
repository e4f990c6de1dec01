import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { inject } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

/**
 * `src/cli/changefeed.ts` bundled by test/cliBundle.ts for this run: spawn it with plain `node`.
 * The development entry through tsx (`npm run changefeed`) has a test of its own
 * (test/integration/devEntrySignals.test.ts).
 */
export const CLI = inject('changefeedBundle');

/** `changefeed run` as a real child process, with its stderr (logs) collected. */
export interface DaemonProcess {
  readonly child: ChildProcess;
  logs(): string;
  exited(): Promise<number | null>;
  /** Resolves once a log line contains `text`. */
  waitForLog(text: string, timeoutMs?: number): Promise<void>;
}

export function startDaemonProcess(args: string[], env: Record<string, string> = {}): DaemonProcess {
  const child = spawn(process.execPath, [CLI, 'run', ...args], {
    cwd: ROOT,
    env: { ...process.env, CHANGEFEED_CONFIG: '', CHANGEFEED_API_KEY: '', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let logs = '';
  child.stderr?.on('data', (c: Buffer) => (logs += c.toString()));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    logs: () => logs,
    exited: () => exit,
    waitForLog: (text, timeoutMs = 15_000) => until(() => logs.includes(text), timeoutMs, `log line "${text}"`),
  };
}

/** Runs a `changefeed` command to completion as a real process (async, so an in-process simulator keeps serving). */
export function runCli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: ROOT,
      env: { ...process.env, CHANGEFEED_CONFIG: '', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    // 'close', not 'exit': the pipes may still hold output when the process has exited.
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** Polls `condition` every 50 ms until it holds; fails after `timeoutMs` naming what it waited for. */
export async function until(
  condition: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A TCP port free right now on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
