import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DeliveryEngine } from '../../src/deliver/deliveryEngine.js';
import { REQUEUE_CHECK_MS } from '../../src/deliver/requeueWatch.js';
import { SinkWorker } from '../../src/deliver/sinkWorker.js';
import { noopLogger } from '../support/noopLogger.js';
import { deliverySchema, RETRY_DEFAULTS } from '../../src/sinkContract/deliveryConfig.js';
import { SinkRejectedError } from '../../src/sinkContract/sinkErrors.js';
import { StoreUnavailableError } from '../../src/store/storeHealth.js';
import { makeTempDir } from '../support/tempDir.js';
import { ingestEntries, openStore, ScriptedSink, testClock } from './scriptedSink.js';

// `changefeed dead-letters retry` runs in another process; the engine learns of it from the
// store's re-queue count, read twice a second (RequeueWatch; an engine given none watches alone). The count is read asynchronously: compared as
// promises it always differed (every worker re-read its outbox twice a second), and a store that
// failed the read left a rejection nobody awaited, which ended the process.

const CHECKS = 20;

afterEach(() => {
  vi.restoreAllMocks();
});

async function setup() {
  const clock = testClock();
  const store = await openStore(join(makeTempDir(), 's.sqlite'), ['out']);
  const sink = new ScriptedSink('out', undefined, clock);
  const warnings: string[] = [];
  const logger = Object.assign(Object.create(noopLogger) as typeof noopLogger, {
    warn: (_fields: unknown, message: string) => void warnings.push(message),
  });
  const engine = new DeliveryEngine(
    [{ sink, delivery: deliverySchema(RETRY_DEFAULTS).parse({ retry: { maxAttempts: 1 } }) }],
    { store, clock, logger, random: () => 0.5 },
  );
  const passChecks = async (checks: number): Promise<void> => {
    for (let i = 0; i < checks; i++) await clock.advance(REQUEUE_CHECK_MS);
  };
  return { clock, store, sink, engine, warnings, passChecks };
}

describe('the delivery engine watching for re-queued dead letters', () => {
  it('has its workers re-read the outbox only when dead letters were re-queued', async () => {
    const { clock, store, sink, engine, passChecks } = await setup();
    const [a] = await ingestEntries(store, 'career', 'c-1', ['a']);
    sink.script = (batch) => {
      if (batch.some((e) => e.id === a) && sink.batches.length === 1) throw new SinkRejectedError('no');
    };
    const reloads = vi.spyOn(SinkWorker.prototype, 'reloadPending');
    engine.start();
    engine.notify();
    await passChecks(CHECKS);
    expect((await store.outbox.counts('out')).dead).toBe(1);
    expect(reloads).not.toHaveBeenCalled();

    // Another process puts the dead letter back in line.
    expect(await store.deadLetters.requeueSink('out', clock.now())).toBe(1);
    await passChecks(2);
    expect(reloads).toHaveBeenCalledTimes(1);
    await passChecks(CHECKS);
    expect(sink.accepted).toEqual([a]);
    expect(reloads).toHaveBeenCalledTimes(1);
    await engine.stop();
    await store.close();
  });

  it('takes up what a replay queued in another process within a check, and leaves an idle outbox unread', async () => {
    const { clock, store, sink, engine, passChecks } = await setup();
    const [a] = await ingestEntries(store, 'career', 'c-1', ['a']);
    engine.start();
    engine.notify();
    await passChecks(2);
    expect(sink.accepted).toEqual([a]);
    // A minute and more with nothing to send: the outbox is not read (a read every half minute
    // per sink was 33 transactions a second at 1,000 tenants).
    const reads = vi.spyOn(store.outbox, 'pending');
    await passChecks(150);
    expect(reads).not.toHaveBeenCalled();

    // `replay --queue-only` in another process: its queued batch moves the re-queue count.
    expect(await store.outbox.enqueueFromJournal('out', {}, clock.now())).toBe(1);
    await passChecks(2);
    expect(sink.accepted).toEqual([a, a]);
    expect(reads).toHaveBeenCalled();
    await engine.stop();
    await store.close();
  });

  it('goes on, and says so, when the store does not answer the check', async () => {
    const { store, engine, warnings, passChecks } = await setup();
    // The count read as the engine starts answers; the three checks after it do not.
    let reads = 0;
    vi.spyOn(store.deadLetters, 'requeueCount').mockImplementation(() =>
      ++reads > 1 && reads <= 4 ? Promise.reject(new StoreUnavailableError('the store is away')) : Promise.resolve(0),
    );
    engine.start();
    await passChecks(CHECKS);
    // Said once for the three (requeueWatch.test.ts), the checks going on after them.
    expect(warnings.filter((m) => m.includes('re-queued dead letters'))).toHaveLength(1);
    expect(reads).toBe(CHECKS + 1);
    await engine.stop();
    await store.close();
  });
});
