import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
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
