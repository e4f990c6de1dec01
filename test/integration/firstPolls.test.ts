import { afterEach, describe, expect, it } from 'vitest';
import type { ManualClock } from '../support/manualClock.js';
import type { ChangefeedDaemon } from '../../src/daemon/changefeedDaemon.js';
import {
  createDaemon,
  deliveredEvents,
  duplicatesOf,
  expectedEventIds,
  simulatorConfig,
  testClock,
} from '../support/daemonHarness.js';
import { makeTempDir } from '../support/tempDir.js';
import { startTestSimulator } from '../support/testSimulator.js';
import { withVirtualTime } from '../support/virtualTime.js';

let daemon: ChangefeedDaemon | undefined;
afterEach(async () => {
  await daemon?.stop();
  daemon = undefined;
});

/** Starts a daemon, runs it for `ms` of virtual time and stops it, as a supervisor's restart would. */
async function life(clock: ManualClock, d: ChangefeedDaemon, ms: number): Promise<void> {
  daemon = d;
  await withVirtualTime(
    clock,
    (async () => {
      await d.start();
      await clock.sleep(ms);
      await d.stop();
    })(),
  );
  daemon = undefined;
}

describe('first polls across restarts', { timeout: 120_000 }, () => {
  it('a daemon restarted five times in 30 s, then left alone for 60 s, delivers every entry', async () => {
    const clock = testClock();
    // A day of history (about 300 entries), little new activity.
    const simulator = await startTestSimulator({
      clock,
      seed: 24,
      careers: 6,
      skills: 3,
      eventsPerHour: 12,
      historyHours: 24,
      readsPerHour: 1_000,
    });
    const stateDir = makeTempDir();
    // watch.schedule.firstPollWithinSeconds keeps its default (60); a budget of 900 an hour,
    // one request every hour / 899 (about 4 s).
    const config = simulatorConfig({
      simulator,
      stateDir,
      startFrom: '2000-01-01T00:00:00Z',
      overrides: { budget: { readsPerHour: 900, reserve: 0 } },
    });
    for (let restart = 0; restart < 5; restart++) await life(clock, createDaemon(config, { clock }), 6_000);
    // Every entry the service held when the last life started must be delivered within it.
    const expected = expectedEventIds(simulator);
    await life(clock, createDaemon(config, { clock }), 60_000);

    const delivered = deliveredEvents(stateDir).map((e) => e.id);
    expect(expected.length).toBeGreaterThan(200);
    expect(expected.filter((id) => !delivered.includes(id))).toEqual([]);
    expect(duplicatesOf(delivered)).toEqual([]);
  });
});
