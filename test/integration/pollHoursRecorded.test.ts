import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parsePollHours, POLL_HOURS_META_KEY } from '../../src/poll/pollHours.js';
import { openSqliteStoreFile } from '../support/sqliteStoreFile.js';
import { createDaemon, simulatorConfig, testClock } from '../support/daemonHarness.js';
import { makeTempDir } from '../support/tempDir.js';
import { startTestSimulator } from '../support/testSimulator.js';
import { withVirtualTime } from '../support/virtualTime.js';

describe("a tenant's hours of polling", () => {
  it('are kept in the store with the requests, allowance, polls, events and worst lag of each hour', async () => {
    const clock = testClock();
    const simulator = await startTestSimulator({
      clock,
      seed: 7,
      careers: 3,
      skills: 2,
      eventsPerHour: 120,
      historyHours: 2,
      readsPerHour: 1_000,
    });
    const stateDir = makeTempDir();
    const config = simulatorConfig({
      simulator,
      stateDir,
      startFrom: new Date(clock.now() - 3_600_000).toISOString(),
      overrides: { budget: { readsPerHour: 3_600, reserve: 0 } },
    });
    const daemon = createDaemon(config, { clock });
    await withVirtualTime(
      clock,
      (async () => {
        await daemon.start();
        // Past an hour boundary (the clock starts at 12:00:00), so two buckets.
        await clock.sleep(3_700_000);
        await daemon.stop();
      })(),
    );
    const store = openSqliteStoreFile(join(stateDir, 'changefeed.sqlite'));
    try {
      const hours = parsePollHours(await store.getMeta(POLL_HOURS_META_KEY));
      expect(hours.map((h) => h.hour)).toEqual([Date.UTC(2026, 10, 22, 12), Date.UTC(2026, 10, 22, 13)]);
      const [first] = hours;
      expect(first?.polls).toBeGreaterThan(5);
      expect(first?.requests).toBeGreaterThanOrEqual(first?.polls ?? Infinity);
      // The service's RateLimit-Limit (1,000) is below the configured cap: the budget allows itself that.
      expect(first?.allowancePerHour).toBe(1_000);
      expect(first?.events).toBeGreaterThan(0);
      // The first polls began an hour behind: the backfill from startFrom.
      expect(first?.worstLagSeconds).toBeGreaterThanOrEqual(3_500);
    } finally {
      await store.close();
    }
  }, 120_000);
});
