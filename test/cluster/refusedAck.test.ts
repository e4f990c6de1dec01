import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { LeaseTable } from '../../src/cluster/leaseTable.js';
import { databaseFence } from '../../src/cluster/writeFence.js';
import { SinkWorker } from '../../src/deliver/sinkWorker.js';
import { noopLogger } from '../support/noopLogger.js';
import type { ChangefeedStore } from '../../src/store/changefeedStore.js';
import { admin, openBackend, prepare } from '../store/postgresTestDb.js';
import { entry, ingest } from '../store/storeContract.suite.js';
import { ScriptedSink, testDelivery } from '../unit/scriptedSink.js';
import { acquireOne } from '../support/acquireOne.js';

// After a lease was lost, a sink worker re-sent one batch in a tight loop and logged nothing: the
// acknowledgement sat in the write's `try`, so the fence's refusal was taken for a failed write,
// recording that failure was refused too, and the batch went out again (78 times in 500 ms).

const escaped: unknown[] = [];
const onEscaped = (error: unknown): void => {
  escaped.push(error);
};
beforeEach(() => {
  process.on('unhandledRejection', onEscaped);
});
afterEach(() => {
  process.off('unhandledRejection', onEscaped);
});

function worker(store: ChangefeedStore, sink: ScriptedSink, onLeaseLost: (error: unknown) => void): SinkWorker {
  return new SinkWorker({
    sink,
    store,
    clock: systemClock,
    logger: noopLogger,
    delivery: testDelivery({
      retry: { initialDelayMs: 10, maxDelayMs: 100, maxAttempts: 0, maxAgeSeconds: 0 },
      batchSize: 10,
    }),
    onLeaseLost,
  });
}

describe.skipIf(!admin)('a sink worker whose acknowledgement the lease fence refuses', () => {
  it('writes the batch once, stops, tells its tenant, and the next holder sends the same events', async () => {
    const backend = await openBackend();
    const leases = new LeaseTable(backend.leasePool, { leaseMs: 60_000 });
    const first = await acquireOne(leases, 't', 'replica-a');
    const storeA = await backend.tenantStore('t', {
      fence: databaseFence({ tenant: 't', holder: 'replica-a', epoch: first!.epoch }, 60_000),
    });
    await prepare(storeA);
    await ingest(storeA, [entry('e-1'), entry('e-2'), entry('e-3')]);

    // The destination takes the batch; meanwhile replica b takes the tenant over.
    let epochB = 0;
    const sinkA = new ScriptedSink('a', async (_batch, index) => {
      if (index > 0) stop.abort(); // a second write is the bug: end the run so the test can say so
      // A statement of replica a still open on the lease row makes the release or the
      // acquisition pass over the row, as a round's does until it ends: each asked again.
      let released = false;
      for (;;) {
        released ||= await leases.release('t', 'replica-a', first!.epoch);
        const granted = released ? await acquireOne(leases, 't', 'replica-b') : undefined;
        if (granted) {
          epochB = granted.epoch;
          break;
        }
        await new Promise((resolve) => setImmediate(resolve));
      }
    });
    const lost: unknown[] = [];
    const stop = new AbortController();
    await worker(storeA, sinkA, (error) => lost.push(error)).run(stop.signal);

    expect(stop.signal.aborted).toBe(false);
    expect(sinkA.writes).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect(lost[0]).toMatchObject({ code: 'LEASE_LOST' });
    const sent = sinkA.writes[0]!;
    expect(sent).toHaveLength(3);

    // Nothing was acknowledged under the lost lease: the new holder sends the same events.
    const storeB = await backend.tenantStore('t', {
      fence: databaseFence({ tenant: 't', holder: 'replica-b', epoch: epochB }, 60_000),
    });
    const sinkB = new ScriptedSink('a');
    await worker(storeB, sinkB, (error) => lost.push(error)).run(new AbortController().signal, {
      deadline: Date.now() + 60_000,
    });
    expect((await storeB.outbox.counts('a')).pending).toBe(0);
    expect(sinkB.accepted).toEqual(sent);
    expect(lost).toHaveLength(1);
    expect(escaped).toEqual([]);
  }, 60_000);
});
