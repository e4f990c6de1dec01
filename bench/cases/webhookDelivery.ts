import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { systemClock } from '../../src/clock.js';
import { DeliveryEngine } from '../../src/deliver/deliveryEngine.js';
import { noopLogger } from '../../src/observe/createLogger.js';
import { createSink, sinkConfigSchema } from '../../src/sinks/sinkRegistry.js';
import { prefilledStore } from '../../test/support/prefilledStore.js';
import { withPeakRss, type BenchRow } from '../benchTable.js';

const SECRET = 'whsec_YmVuY2htYXJrLXdlYmhvb2stc2VjcmV0';

/**
 * Starts `changefeed receive` in its own process, as a real endpoint would be: a receiver in the
 * daemon's process would compete with it for the same event loop.
 */
async function startReceiverProcess(): Promise<{ url: string; child: ChildProcess }> {
  const cli = join(import.meta.dirname, '..', '..', 'src', 'cli', 'changefeed.ts');
  const child = fork(cli, ['receive', '--port', '0', '--secret', SECRET, '--quiet'], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
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
  const { store } = prefilledStore(count, [{ name: 'hook', type: 'webhook' }]);
  const config = sinkConfigSchema.parse({ name: 'hook', type: 'webhook', url: receiver.url, secret: SECRET, delivery: { maxInFlight: concurrency } });
  const engine = new DeliveryEngine([{ sink: createSink(config), delivery: config.delivery }], { store, clock: systemClock, logger: noopLogger });
  const started = performance.now();
  const { result, peakRssMiB } = await withPeakRss(() => engine.drain(Date.now() + 600_000));
  const seconds = (performance.now() - started) / 1000;
  await engine.stop();
  store.close();
  receiver.child.kill();
  if (!result.every((r) => r.drained)) throw new Error('webhook sink did not drain');
  return { case: `webhook, concurrency ${concurrency}`, events: count, 'events/s': Math.round(count / seconds), 'peak RSS MiB': Math.round(peakRssMiB) };
}
