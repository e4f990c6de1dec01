import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { BenchRow } from '../benchTable.js';
import { drainThroughput } from '../drainThroughput.js';

const SECRET = 'whsec_YmVuY2htYXJrLXdlYmhvb2stc2VjcmV0';

/**
 * Starts `changefeed receive` in its own process, as a real endpoint would be: a receiver in the
 * daemon's process would compete with it for the same event loop.
 */
async function startReceiverProcess(): Promise<{ url: string; child: ChildProcess }> {
  const cli = join(import.meta.dirname, '..', '..', 'src', 'cli', 'changefeed.ts');
  const child = fork(cli, ['receive', '--port', '0', '--secret', SECRET, '--quiet'], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      const match = /receiving webhooks at (\S+)/.exec(out);
      if (match?.[1]) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`receiver exited with ${code}`)));
  });
  return { url, child };
}

/** Events per second from a pre-filled outbox to a local receiver that answers at once. */
export async function webhookDelivery(count: number, concurrency: number): Promise<BenchRow> {
  const receiver = await startReceiverProcess();
  try {
    return await drainThroughput(
      `webhook, concurrency ${concurrency}`,
      { name: 'hook', type: 'webhook', url: receiver.url, secret: SECRET, delivery: { maxInFlight: concurrency } },
      count,
    );
  } finally {
    receiver.child.kill();
  }
}
