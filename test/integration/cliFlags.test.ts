import { createServer, type Server } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCliInProcess as runCli } from '../support/runCli.js';
import { makeTempDir } from '../support/tempDir.js';

// Each case runs the CLI (in-process) and checks what a user sees: the exit code and a
// message naming the flag or setting to change, never a stack trace.
const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

async function occupiedPort(): Promise<number> {
  const server = createServer();
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

function expectUsageError(result: { status: number | null; stderr: string }, ...mentions: string[]): void {
  expect(result.status, result.stderr).toBe(2);
  for (const text of mentions) expect(result.stderr).toContain(text);
  expect(result.stderr).not.toMatch(/\n\s+at /); // no stack trace
  expect(result.stderr).not.toContain('ZodError');
}

describe('numeric flags', () => {
  it.each([
    [['run', '--shutdown-timeout', 'abc'], '--shutdown-timeout'],
    [['run', '--shutdown-timeout=-1'], '--shutdown-timeout'],
    [['demo', '--events-per-hour', 'abc'], '--events-per-hour'],
    [['demo', '--seed', '1.5'], '--seed'],
    [['simulate', '--port', '70000'], '--port'],
    [['simulate', '--error-rate', '2'], '--error-rate'],
    [['simulate', '--sort-order', 'sideways'], '--sort-order'],
    [['simulate', '--companies', '0'], '--companies'],
    [['simulate', '--companies', '10001'], '--companies'],
    [['receive', '--port', '0x10'], '--port'],
  ])(
    '%j is refused with exit 2 naming %s',
    async (args, flag) => {
      expectUsageError(await runCli(args), flag, args[args.length - 1]?.replace(/^--[a-z-]+=/, '') ?? '');
    },
    60_000,
  );
});

describe('a port already in use', () => {
  it('receive names the port and the flag', async () => {
    const port = await occupiedPort();
    expectUsageError(await runCli(['receive', '--port', String(port)]), `port ${port}`, 'already in use', '--port');
  }, 60_000);

  it('simulate names the port and the flag', async () => {
    const port = await occupiedPort();
    expectUsageError(await runCli(['simulate', '--port', String(port)]), `port ${port}`, '--port');
  }, 60_000);

  it('run names http.port and its environment variable', async () => {
    const port = await occupiedPort();
    const dir = makeTempDir();
    const file = join(dir, 'changefeed.yaml');
    writeFileSync(
      file,
      [
        'api: { baseUrl: "http://127.0.0.1:9/api" }',
        `http: { port: ${port} }`,
        `stateDir: ${join(dir, 'state')}`,
        `sinks: [{ name: out, type: file, path: ${join(dir, 'events.jsonl')} }]`,
      ].join('\n'),
    );
    const result = await runCli(['run', '--config', file], {
      CHANGEFEED_API_KEY: 'sim_live_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
    });
    expectUsageError(result, `port ${port}`, 'http.port', 'CHANGEFEED_HTTP_PORT');
  }, 60_000);
});

describe('receive --secret', () => {
  it.each(['not-a-secret', 'whsec_', 'whsec_!!!!', 'whsec_c2hvcnQ='])(
    'refuses %j with exit 2',
    async (secret) => {
      expectUsageError(await runCli(['receive', '--port', '0', '--secret', secret]), '--secret', 'whsec_');
    },
    60_000,
  );

  it('refuses --no-verify beside --secret with exit 2: verifying and not are one choice', async () => {
    const both = ['receive', '--port', '0', '--no-verify', '--secret', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'];
    expectUsageError(await runCli(both), '--no-verify accepts unsigned requests; it cannot be combined with --secret');
  }, 60_000);
});
