import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DeliveryEngine } from '../../src/deliver/deliveryEngine.js';
import { REQUEUE_CHECK_MS, RequeueWatch } from '../../src/deliver/requeueWatch.js';
import { SinkWorker } from '../../src/deliver/sinkWorker.js';
import { noopLogger } from '../support/noopLogger.js';
import { deliverySchema, RETRY_DEFAULTS } from '../../src/sinkContract/deliveryConfig.js';
import { SinkRejectedError } from '../../src/sinkContract/sinkErrors.js';
import { StoreUnavailableError } from '../../src/store/storeHealth.js';
import { makeTempDir } from '../support/tempDir.js';
import { ingestEntries, openStore, ScriptedSink, testClock } from './scriptedSink.js';

// The engines of a process share one re-queue watch: one timer for all of them (one per engine
// was 10,000 idle wakes a second at 5,000 tenants), and only an engine whose count changed
// re-reads its outbox.

const ENGINES = 3;
const CHECKS = 10;

afterEach(() => {
  vi.restoreAllMocks();
});

async function setup() {
  const clock = testClock();
  const warnings: { fields: unknown; message: string }[] = [];
  const infos: { fields: unknown; message: string }[] = [];
  const logger = Object.assign(Object.create(noopLogger) as typeof noopLogger, {
    warn: (fields: unknown, message: string) => void warnings.push({ fields, message }),
    info: (fields: unknown, message: string) => void infos.push({ fields, message }),
  });
  const requeues = new RequeueWatch(clock, logger);
  const dir = makeTempDir();
  const tenants = await Promise.all(
    Array.from({ length: ENGINES }, async (_, i) => {
      const name = `out-${i}`;
      const store = await openStore(join(dir, `${name}.sqlite`), [name]);
      const sink = new ScriptedSink(name, undefined, clock);
      const engine = new DeliveryEngine(
        [{ sink, delivery: deliverySchema(RETRY_DEFAULTS).parse({ retry: { maxAttempts: 1 } }) }],
        { store, clock, logger: noopLogger, random: () => 0.5, requeues },
      );
      return { name, store, sink, engine };
    }),
  );
  const passChecks = async (checks: number): Promise<void> => {
    for (let i = 0; i < checks; i++) await clock.advance(REQUEUE_CHECK_MS);
  };
  const stopAll = async (): Promise<void> => {
    for (const t of tenants) await t.engine.stop();
    await requeues.stopped();
    for (const t of tenants) await t.store.close();
  };
  return { clock, requeues, tenants, warnings, infos, passChecks, stopAll };
}

describe('one re-queue watch for the delivery engines of a process', () => {
  it('checks every engine on one timer, and stops it after the last engine stops', async () => {
    const { clock, tenants, passChecks, stopAll } = await setup();
    const sleeps = vi.spyOn(clock, 'sleep');
    const reads = tenants.map((t) => vi.spyOn(t.store.deadLetters, 'requeueCount'));
    for (const t of tenants) t.engine.start();
    await passChecks(CHECKS);
    const watchSleeps = sleeps.mock.calls.filter(([ms]) => ms === REQUEUE_CHECK_MS);
    expect(watchSleeps).toHaveLength(CHECKS + 1);
    for (const read of reads) expect(read).toHaveBeenCalledTimes(CHECKS + 1);

    await tenants[0]?.engine.stop();
    await passChecks(CHECKS);
    expect(reads[0]).toHaveBeenCalledTimes(CHECKS + 1);
    expect(reads[1]).toHaveBeenCalledTimes(2 * CHECKS + 1);
    await stopAll();
    expect(clock.nextWakeAt()).toBeUndefined();
  });

  it('has only the engine whose count changed re-read its outbox', async () => {
    const { clock, tenants, passChecks, stopAll } = await setup();
    const [first, second] = tenants;
    if (!first || !second) throw new Error('two tenants expected');
    const [a] = await ingestEntries(first.store, 'career', 'c-1', ['a']);
    first.sink.script = (batch) => {
      if (batch.some((e) => e.id === a) && first.sink.batches.length === 1) throw new SinkRejectedError('no');
    };
    const reloads = vi.spyOn(SinkWorker.prototype, 'reloadPending');
    for (const t of tenants) t.engine.start();
    first.engine.notify();
    await passChecks(CHECKS);
    expect((await first.store.outbox.counts(first.name)).dead).toBe(1);
    expect(reloads).not.toHaveBeenCalled();

    // Another process puts the first tenant's dead letter back in line.
    expect(await first.store.deadLetters.requeueSink(first.name, clock.now())).toBe(1);
    await passChecks(2);
    expect(reloads.mock.contexts.map((worker) => (worker as SinkWorker).name)).toEqual([first.name]);
    await passChecks(CHECKS);
    expect(first.sink.accepted).toEqual([a]);
    await stopAll();
  });

  // Once per check was two warnings a second for as long as a database was away.
  it('says once per outage, not once per check or engine, that the store did not answer, and when it answers again', async () => {
    const { tenants, warnings, infos, passChecks, stopAll } = await setup();
    const reads = tenants.map((t) =>
      vi.spyOn(t.store.deadLetters, 'requeueCount').mockRejectedValue(new StoreUnavailableError('the store is away')),
    );
    for (const t of tenants) t.engine.start();
    await passChecks(CHECKS);
    const failed = warnings.filter((w) => w.message.includes('re-queued dead letters'));
    expect(failed).toHaveLength(1);
    expect(failed[0]?.fields).toMatchObject({ engines: ENGINES });
    for (const read of reads) expect(read).toHaveBeenCalledTimes(CHECKS + 1);

    for (const read of reads) read.mockRestore();
    await passChecks(2);
    expect(infos.filter((i) => i.message.includes('re-queued dead letters answers again'))).toEqual([
      { fields: { failedChecks: CHECKS }, message: 'checking for re-queued dead letters answers again' },
    ]);
    await stopAll();
  });
});
