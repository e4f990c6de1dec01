import { describe, expect, it } from 'vitest';
import { eventIdFor } from '../../src/events/eventId.js';
import { deliveredEvents, runOnce, simulatorConfig, testClock } from '../support/daemonHarness.js';
import { makeTempDir } from '../support/tempDir.js';
import { newestFirstSkillLog } from '../support/testSimulator.js';

const HOUR = 3_600_000;

describe("a skill's version log read newest-first", () => {
  it('a poll that finds news on a log longer than a page stops at the first page that reaches what the last read read', async () => {
    const clock = testClock();
    const { simulator, skillId } = await newestFirstSkillLog(clock, 3);
    const path = `/api/v1/skills/${skillId}/activity`;
    const reads = (): number => simulator.requests.filter((r) => r.path === path).length;
    simulator.appendBurst('skill', skillId, 450, { from: clock.now() - 3 * HOUR, to: clock.now() - 2 * HOUR });
    const stateDir = makeTempDir();
    const config = simulatorConfig({ simulator, stateDir, overrides: { watch: { identityProviderEvents: false } } });
    expect((await runOnce(config, { clock })).ok).toBe(true);
    // The baseline reads the whole log: three pages of 200.
    expect(reads()).toBe(3);

    await clock.advance(10 * 60_000);
    const news = simulator.appendBurst('skill', skillId, 3, { from: clock.now() - 60_000, to: clock.now() - 1_000 });
    await clock.advance(1_000);
    expect((await runOnce(config, { clock })).ok).toBe(true);
    expect(reads()).toBe(4);
    expect(deliveredEvents(stateDir).map((e) => e.id)).toEqual(
      expect.arrayContaining(news.map((e) => eventIdFor('skill', skillId, e.id))),
    );
    expect(deliveredEvents(stateDir)).toHaveLength(3);
  });
});
