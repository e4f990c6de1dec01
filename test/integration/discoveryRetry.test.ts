import { afterEach, describe, expect, it } from 'vitest';
import type { ChangefeedDaemon } from '../../src/daemon/changefeedDaemon.js';
import {
  createDaemon,
  deliveredEvents,
  expectedEventIds,
  simulatorConfig,
  testClock,
} from '../support/daemonHarness.js';
import { startRewritingProxy } from '../support/rewritingProxy.js';
import { makeTempDir } from '../support/tempDir.js';
import { startTestSimulator } from '../support/testSimulator.js';
import { withVirtualTime } from '../support/virtualTime.js';

let daemon: ChangefeedDaemon | undefined;
afterEach(async () => {
  await daemon?.stop();
  daemon = undefined;
});

// The failover test failed in a loaded run this way: ten tenants' first discoveries timed out,
// and their careers were not polled until the next cron time, 15 minutes on.
describe('a daemon whose discovery failed', () => {
  it('tries it again after a backoff, not only at the next cron time', async () => {
    const clock = testClock(); // 12:00:00, so the cron's next run is at 12:15
    const simulator = await startTestSimulator({
      clock,
      seed: 41,
      careers: 2,
      skills: 0,
      identityProviderShare: 0,
      eventsPerHour: 60,
      historyHours: 1,
      readsPerHour: 1_000_000,
    });
    let refused = 0;
    const baseUrl = await startRewritingProxy(simulator.url, (answer) => {
      if (refused > 0 || !answer.path.startsWith('/api/v1/careers?')) return answer;
      refused++;
      return { ...answer, status: 503, headers: { 'content-type': 'text/plain' }, body: 'unavailable' };
    });
    const stateDir = makeTempDir();
    const config = simulatorConfig({
      simulator,
      stateDir,
      startFrom: '2000-01-01T00:00:00Z',
      overrides: { watch: { identityProviderEvents: false, skills: { discover: false }, pollIntervalSeconds: 30 } },
    });
    daemon = createDaemon({ ...config, api: { ...config.api, baseUrl } }, { clock });
    const d = daemon;
    await withVirtualTime(
      clock,
      (async () => {
        await d.start();
        await clock.sleep(3 * 60_000);
      })(),
    );
    expect(refused).toBe(1);
    // Careers are all there is to read: every entry of theirs delivered, well before 12:15.
    const expected = expectedEventIds(simulator, Date.parse('2000-01-01T00:00:00Z'));
    expect(expected.length).toBeGreaterThan(10);
    const delivered = new Set(deliveredEvents(stateDir).map((e) => e.id));
    expect(expected.filter((id) => !delivered.has(id))).toEqual([]);
  });
});
