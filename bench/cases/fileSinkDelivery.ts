import { join } from 'node:path';
import { DeliveryEngine } from '../../src/deliver/deliveryEngine.js';
import { systemClock } from '../../src/clock.js';
import { noopLogger } from '../../src/observe/createLogger.js';
import { createSink, sinkConfigSchema } from '../../src/sinks/sinkRegistry.js';
import { prefilledStore } from '../../test/support/prefilledStore.js';
import { withPeakRss, type BenchRow } from '../benchTable.js';

/** Events per second from a pre-filled outbox into the file sink (one fsync per batch). */
export async function fileSinkDelivery(count: number): Promise<BenchRow> {
  const { store, dir } = prefilledStore(count, [{ name: 'file', type: 'file' }]);
  const config = sinkConfigSchema.parse({ name: 'file', type: 'file', path: join(dir, 'events.jsonl') });
  const engine = new DeliveryEngine([{ sink: createSink(config), delivery: config.delivery }], { store, clock: systemClock, logger: noopLogger });
  const started = performance.now();
  const { result, peakRssMiB } = await withPeakRss(() => engine.drain(Date.now() + 600_000));
  const seconds = (performance.now() - started) / 1000;
  await engine.stop();
  store.close();
  if (!result.every((r) => r.drained)) throw new Error('file sink did not drain');
  return { case: 'file sink, outbox pre-filled', events: count, 'events/s': Math.round(count / seconds), 'peak RSS MiB': Math.round(peakRssMiB) };
}
