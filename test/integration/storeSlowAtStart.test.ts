import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ChangefeedDaemon } from '../../src/daemon/changefeedDaemon.js';
import { RateEstimates } from '../../src/store/sqlite/rateEstimates.js';
import { StoreUnavailableError } from '../../src/store/storeHealth.js';
import { createDaemon, simulatorConfig, testClock } from '../support/daemonHarness.js';
import { makeTempDir } from '../support/tempDir.js';
import { startTestSimulator } from '../support/testSimulator.js';
import { withVirtualTime } from '../support/virtualTime.js';

let daemon: ChangefeedDaemon | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await daemon?.stop();
  daemon = undefined;
});

// The first thing a tenant's poll loop reads is the change rates learned before a restart. With
// 1,000 tenants starting at once, PostgreSQL's pool timed that read out, and the rejection ended
// the whole process. The loop now waits for the store as polls and deliveries do.
describe('a store that does not answer when the poll loop starts', () => {
  it('is waited for, shown in /readyz meanwhile, and then polled as usual', async () => {
    const clock = testClock();
    const simulator = await startTestSimulator({ clock, seed: 5, careers: 2, skills: 0, eventsPerHour: 0 });
    const list = vi
      .spyOn(RateEstimates.prototype, 'list')
      .mockRejectedValueOnce(new StoreUnavailableError('the database is away'))
      .mockRejectedValueOnce(new StoreUnavailableError('the database is away'));
    daemon = createDaemon(
      simulatorConfig({
        simulator,
        stateDir: makeTempDir(),
        overrides: { watch: { schedule: { firstPollWithinSeconds: 0 } } },
      }),
      { clock },
    );
    const d = daemon;
    const readinessAtFirstFailure: string[] = [];
    await withVirtualTime(
      clock,
      (async () => {
        await d.start();
        while (list.mock.calls.length < 2) await clock.sleep(100);
        readinessAtFirstFailure.push(...d.readiness().flatMap((c) => (c.ok ? [] : [`${c.name}: ${c.detail}`])));
        while (!simulator.requests.some((r) => r.path.endsWith('/activity'))) await clock.sleep(1_000);
      })(),
      { maxVirtualMs: 60_000 },
    );
    expect(list).toHaveBeenCalledTimes(3);
    expect(readinessAtFirstFailure.join('\n')).toMatch(/the database is away/);
    expect(d.readiness().every((c) => c.ok)).toBe(true);
  });
});
