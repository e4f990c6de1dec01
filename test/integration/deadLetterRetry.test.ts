import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REQUEUE_COUNT_KEY } from '../../src/store/storeRecords.js';
import { runBundledScript } from '../support/bundledScript.js';
import { ManualClock } from '../support/manualClock.js';
import { until } from '../support/daemonProcess.js';
import { withVirtualTime } from '../support/virtualTime.js';
import { receiver, storeWithEvents, webhookEngine } from '../support/webhookHarness.js';
import { openSqliteStoreFile } from '../support/sqliteStoreFile.js';

// `dead-letters retry` took effect only when the worker next read the outbox from its start:
// about two minutes on a daemon with a backlog. Time is virtual, so "at once" is measured on the
// worker's own clock (it moves only while the worker waits on it), not on a busy machine's.
describe('changefeed dead-letters retry while the daemon runs', () => {
  it('is taken up at once: the re-queued event is delivered within the idle look-again of 5 s', async () => {
    let refuse = true;
    let redelivered: () => void = () => undefined;
    const redelivery = new Promise<void>((resolve) => (redelivered = resolve));
    const hook = await receiver({
      respond: (r) => {
        const first = r.body.includes('"act_0_0"');
        if (first && !refuse) redelivered();
        return { status: refuse && first ? 422 : 204 };
      },
    });
    const { store, dir } = await storeWithEvents(400, 400);
    const clock = new ManualClock();
    const engine = webhookEngine({ store, url: hook.url, clock, sink: { delivery: { maxInFlight: 4 } } });
    engine.start();
    try {
      await withVirtualTime(
        clock,
        until(
          async () => {
            const counts = await store.outbox.counts('hook');
            return counts.dead === 1 && counts.pending === 0;
          },
          60_000,
          'one dead letter, the rest delivered',
        ),
      );
      refuse = false;
      // What the CLI does, from another connection to the store.
      const cli = openSqliteStoreFile(join(dir, 'changefeed.sqlite'));
      const [dead] = await cli.deadLetters.list();
      expect(await cli.deadLetters.requeueEvent(dead?.eventId as string, 'hook', clock.now())).toBe(1);
      await cli.close();
      // Throws if the worker's clock has to pass 5 s before it sends the event again.
      await withVirtualTime(clock, redelivery, { maxVirtualMs: 5_000 });
      await until(
        async () => (await store.outbox.counts('hook')).delivered === 400,
        30_000,
        'the re-queued event delivered',
      );
    } finally {
      await engine.stop();
      await store.close();
    }
  }, 120_000);
});

// The re-queue and its count are one transaction (a daemon in another process learns of a
// re-queue only from its count): a `dead-letters retry` killed between the two puts nothing back.
describe('changefeed dead-letters retry killed mid-way', () => {
  it('puts nothing back in line when SIGKILL ends it between the re-queue and its count', async () => {
    const { store, dir } = await storeWithEvents(2, 2);
    const [first] = await store.outbox.pending('hook', 0, 10);
    await store.outbox.markDead('hook', [{ seq: first!.seq, error: 'gone' }], 1);
    const dead = await store.deadLetters.list();
    await store.close();
    // The count's insert calls a function that SIGKILLs its own process: the re-queue's UPDATE has run.
    const child = await runBundledScript(`import { openSqliteStoreFile } from './test/support/sqliteStoreFile.ts';
      const store = openSqliteStoreFile(${JSON.stringify(join(dir, 'changefeed.sqlite'))});
      store.db.function('die', () => process.kill(process.pid, 'SIGKILL'));
      store.db.exec("CREATE TEMP TRIGGER die_at_count BEFORE INSERT ON main.meta WHEN NEW.key = '${REQUEUE_COUNT_KEY}' BEGIN SELECT die(); END");
      console.log('requeued ' + (await store.deadLetters.requeueEvent(${JSON.stringify(dead[0]!.eventId)}, 'hook', 2)));`);
    expect({ signal: child.signal, out: child.stdout }).toEqual({ signal: 'SIGKILL', out: '' });
    const after = openSqliteStoreFile(join(dir, 'changefeed.sqlite'));
    try {
      expect(await after.deadLetters.list()).toEqual(dead);
      expect(await after.deadLetters.requeueCount()).toBe(0);
    } finally {
      await after.close();
    }
  });
});
