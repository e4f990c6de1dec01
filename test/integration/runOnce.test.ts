import { describe, expect, it } from 'vitest';
import { startTestSimulator } from '../support/testSimulator.js';
import {
  deliveredEvents,
  duplicatesOf,
  expectedEventIds,
  runOnce,
  simulatorConfig,
  testClock,
} from '../support/daemonHarness.js';
import { makeTempDir } from '../support/tempDir.js';

const BACKFILL_ALL = '2000-01-01T00:00:00Z';

describe('run --once against the simulator', () => {
  for (const sortOrder of ['newest-first', 'oldest-first'] as const) {
    it(`delivers every entry of all three logs exactly once when logs are sorted ${sortOrder}`, async () => {
      const clock = testClock();
      const simulator = await startTestSimulator({
        clock,
        seed: 7,
        careers: 6,
        skills: 5,
        eventsPerHour: 2_000,
        historyHours: 2,
        sortOrder,
        readsPerHour: 1_000_000,
      });
      const expected = expectedEventIds(simulator);
      const stateDir = makeTempDir();
      const report = await runOnce(simulatorConfig({ simulator, stateDir, startFrom: BACKFILL_ALL }), { clock });
      expect(report.ok, JSON.stringify(report.sweep.failures)).toBe(true);
      expect(expected.length).toBeGreaterThan(3_000);
      const ids = deliveredEvents(stateDir).map((e) => e.id);
      expect(duplicatesOf(ids)).toEqual([]);
      expect(new Set(ids)).toEqual(new Set(expected));
    });
  }

  it('starts from now by default: history is recorded, not emitted, and later entries are', async () => {
    const clock = testClock();
    const simulator = await startTestSimulator({
      clock,
      seed: 3,
      careers: 3,
      skills: 3,
      eventsPerHour: 0,
      historyHours: 1,
      readsPerHour: 1_000_000,
    });
    const stateDir = makeTempDir();
    const config = simulatorConfig({ simulator, stateDir });
    expect((await runOnce(config, { clock })).ok).toBe(true);
    expect(deliveredEvents(stateDir)).toEqual([]);
    await clock.advance(1_000);
    const fresh = [
      ...simulator.appendEntries('career', simulator.careerIds[0] as string, [{ event: 'career_updated' }]),
      ...simulator.appendEntries('skill', simulator.skillIds[0] as string, [{ event: 'version_created' }]),
      ...simulator.appendEntries('identity_provider', null, [{ event: 'user_provisioned' }]),
    ];
    await clock.advance(2_000);
    expect((await runOnce(config, { clock })).ok).toBe(true);
    const delivered = deliveredEvents(stateDir);
    expect(delivered.map((e) => e.data.id).sort()).toEqual(fresh.map((e) => e.id).sort());
  });

  it('emits nothing twice across repeated overlapping sweeps while activity goes on', async () => {
    const clock = testClock();
    const simulator = await startTestSimulator({
      clock,
      seed: 11,
      careers: 4,
      skills: 3,
      eventsPerHour: 1_200,
      historyHours: 1,
      readsPerHour: 1_000_000,
    });
    const stateDir = makeTempDir();
    const config = simulatorConfig({ simulator, stateDir, startFrom: BACKFILL_ALL });
    for (let i = 0; i < 4; i++) {
      expect((await runOnce(config, { clock })).ok).toBe(true);
      await clock.advance(90_000);
    }
    const expected = expectedEventIds(simulator);
    expect((await runOnce(config, { clock })).ok).toBe(true);
    const ids = deliveredEvents(stateDir).map((e) => e.id);
    expect(duplicatesOf(ids)).toEqual([]);
    expect(new Set(ids)).toEqual(new Set(expected));
  });

  it('sixteen polls waiting for the read budget on one signal draw no listener-leak warning', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(`${w.name}: ${w.message}`);
    process.on('warning', onWarning);
    try {
      const clock = testClock();
      const simulator = await startTestSimulator({
        clock,
        seed: 12,
        careers: 40,
        skills: 0,
        skillShare: 0,
        identityProviderShare: 0,
        eventsPerHour: 60,
        historyHours: 1,
        readsPerHour: 1_000,
      });
      const config = simulatorConfig({
        simulator,
        stateDir: makeTempDir(),
        overrides: {
          watch: { identityProviderEvents: false, concurrency: 16 },
          budget: { readsPerHour: 3_600, reserve: 0 },
        },
      });
      expect((await runOnce(config, { clock })).ok).toBe(true);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => w.startsWith('MaxListenersExceededWarning'))).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
