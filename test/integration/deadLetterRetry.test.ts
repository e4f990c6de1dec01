import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { ChangefeedStore } from '../../src/store/changefeedStore.js';
import { until } from '../support/daemonProcess.js';
import { receiver, storeWithEvents, webhookEngine } from '../support/webhookHarness.js';

// `dead-letters retry` took effect only when the worker next read the outbox from its start:
// about two minutes on a daemon with a backlog.
describe('changefeed dead-letters retry while the daemon runs', () => {
  it('is taken up at once: the re-queued event is delivered within a second or so', async () => {
    let refuse = true;
    const hook = await receiver({ respond: (r) => ({ status: refuse && r.body.includes('"act_0_0"') ? 422 : 204 }) });
    const { store, dir } = storeWithEvents(400, 400);
    const engine = webhookEngine({ store, url: hook.url, clock: systemClock, sink: { delivery: { maxInFlight: 4 } } });
    engine.start();
    try {
      await until(
        () => store.outbox.counts('hook').dead === 1 && store.outbox.counts('hook').pending === 0,
        60_000,
        'one dead letter, the rest delivered',
      );
      refuse = false;
      // What the CLI does, from another connection to the store.
      const cli = ChangefeedStore.open(join(dir, 'changefeed.sqlite'));
      const [dead] = cli.deadLetters.list();
      const requeuedAt = Date.now();
      expect(cli.deadLetters.requeueEvent(dead?.eventId as string, 'hook', requeuedAt)).toBe(1);
      cli.close();
      await until(() => store.outbox.counts('hook').delivered === 400, 30_000, 'the re-queued event delivered');
      expect(Date.now() - requeuedAt).toBeLessThan(4_000);
    } finally {
      await engine.stop();
      store.close();
    }
  }, 120_000);
});
