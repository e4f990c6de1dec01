import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI, freePort, until } from '../support/daemonProcess.js';

const ROOT = join(import.meta.dirname, '..', '..');
let child: ChildProcess | undefined;
afterEach(() => {
  child?.kill('SIGKILL');
  child = undefined;
});

async function startReceive(port: number, extra: string[] = []): Promise<() => string> {
  let out = '';
  child = spawn(process.execPath, [CLI, 'receive', '--port', String(port), ...extra], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  await until(() => out.includes('receiving webhooks at'), 60_000, 'the receiver listening');
  return () => out;
}

/**
 * POSTs `chunks` chunks of 1 MiB (no Content-Length unless `declared`), resolving with the status,
 * or with 'reset' when the receiver closed the connection before the sender saw its answer.
 */
function post(
  port: number,
  options: { chunks?: number; declared?: number; headers?: Record<string, string>; body?: string },
): Promise<number | 'reset'> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/webhooks',
        method: 'POST',
        headers: { ...(options.declared ? { 'content-length': String(options.declared) } : {}), ...options.headers },
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', (error) => (/EPIPE|ECONNRESET/.test(error.message) ? resolve('reset') : reject(error)));
    if (options.body !== undefined) {
      req.end(options.body);
      return;
    }
    const chunk = Buffer.alloc(1024 * 1024, 'x');
    let sent = 0;
    const pump = (): void => {
      while (sent < (options.chunks ?? 0)) {
        sent++;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      req.end();
    };
    // A declared body is never sent: the headers alone must be enough for the 413.
    if (options.declared) req.flushHeaders();
    else pump();
  });
}

// One unauthenticated 1.5 GB POST took `changefeed receive` to 3.16 GB and crashed it; an unsigned
// body with ANSI escapes forged a "signature verified" line.
describe('changefeed receive against hostile senders', () => {
  it('refuses a declared 1.5 GB body before reading it, and a streamed one at the cap, with 413', async () => {
    const port = await freePort();
    await startReceive(port, ['--max-body-bytes', String(4 * 1024 * 1024), '--no-verify']);
    expect(await post(port, { declared: 1_500_000_000 })).toBe(413);
    // The 413 goes out at once; a sender still writing may see the connection close first.
    expect([413, 'reset']).toContain(await post(port, { chunks: 64 }));
    expect(child?.exitCode).toBeNull();
    expect(await post(port, { body: '{"type":"small"}' })).toBe(204);
  }, 120_000);

  it('escapes control characters from the request, so nothing can forge a line', async () => {
    const port = await freePort();
    const output = await startReceive(port, ['--secret', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw']);
    const forged = 'x\r\n\u001b[32m✓ evt_1 com.forged (signature verified)\u001b[0m';
    expect(await post(port, { body: JSON.stringify({ type: forged }) })).toBe(401);
    await until(() => output().includes('REJECTED'), 30_000, 'the rejected line');
    const lines = output()
      .split('\n')
      .filter((l) => l.startsWith('✓') || l.startsWith('✗'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('x\\u000d\\u000a\\u001b[32m');
    expect(output()).not.toContain('\u001b');
  }, 120_000);
});
