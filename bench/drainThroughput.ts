import { systemClock } from '../src/clock.js';
import { DeliveryEngine } from '../src/deliver/deliveryEngine.js';
import { noopLogger } from '../test/support/noopLogger.js';
import { createSink, sinkConfigSchema } from '../src/sinks/sinkRegistry.js';
import { prefilledStore } from '../test/support/prefilledStore.js';
import { withPeakRss, type BenchRow } from './benchTable.js';

/**
 * Events per second one sink takes from an outbox pre-filled with `count` events over 500
 * objects, and the process's peak RSS meanwhile. The clock starts after the pre-fill.
 */
export async function drainThroughput(
  label: string,
  rawConfig: Record<string, unknown>,
  count: number,
): Promise<BenchRow> {
  const config = sinkConfigSchema.parse(rawConfig);
  const { store } = await prefilledStore(count, [{ name: config.name, type: config.type }]);
  const engine = new DeliveryEngine([{ sink: createSink(config), delivery: config.delivery }], {
    store,
    clock: systemClock,
    logger: noopLogger,
  });
  const started = performance.now();
  const { result, peakRssMiB } = await withPeakRss(() => engine.drain(Date.now() + 600_000));
  const seconds = (performance.now() - started) / 1000;
  await engine.stop();
  await store.close();
  if (!result.every((r) => r.drained)) throw new Error(`${label}: did not drain (${JSON.stringify(result)})`);
  return {
    case: label,
    events: count,
    'events/s': Math.round(count / seconds),
    'peak RSS MiB': Math.round(peakRssMiB),
  };
}
