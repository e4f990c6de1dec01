import { describe, expect, it } from 'vitest';
import {
  deliveredEvents,
  duplicatesOf,
  expectedEventIds,
  runOnce,
  simulatorConfig,
  testClock,
} from '../support/daemonHarness.js';
import { makeTempDir } from '../support/tempDir.js';
import { startTestSimulator } from '../support/testSimulator.js';

const BACKFILL_ALL = '2000-01-01T00:00:00Z';

describe('daemons of two companies against one simulator', () => {
  it('every request carries the configured instance id, and each company sees only its own daemon', async () => {
    const clock = testClock();
    const simulator = await startTestSimulator({
      clock,
      seed: 14,
      companies: 2,
      careers: 3,
      skills: 2,
      eventsPerHour: 300,
      historyHours: 1,
      readsPerHour: 1_000_000,
    });
    const replicas = [
      { instanceId: 'replica-a', company: simulator.companies[0]!, stateDir: makeTempDir() },
      { instanceId: 'replica-b', company: simulator.companies[1]!, stateDir: makeTempDir() },
    ];
    for (const { instanceId, company, stateDir } of replicas) {
      const config = simulatorConfig({
        simulator,
        stateDir,
        apiKey: company.apiKey,
        startFrom: BACKFILL_ALL,
        overrides: { cluster: { instanceId } },
      });
      const report = await runOnce(config, { clock });
      expect(report.ok, JSON.stringify(report.sweep.failures)).toBe(true);
      // Each delivered exactly its own company's entries.
      const ids = deliveredEvents(stateDir).map((e) => e.id);
      expect(duplicatesOf(ids)).toEqual([]);
      expect(new Set(ids)).toEqual(new Set(expectedEventIds(company)));
    }
    const byCompany = (company: number) => simulator.instanceRequests.filter((r) => r.company === company);
    expect(byCompany(0).length).toBeGreaterThan(5);
    expect(byCompany(1).length).toBeGreaterThan(5);
    expect(new Set(byCompany(0).map((r) => r.instanceId))).toEqual(new Set(['replica-a']));
    expect(new Set(byCompany(1).map((r) => r.instanceId))).toEqual(new Set(['replica-b']));
    expect(simulator.instanceRequests.filter((r) => r.company === null || r.status !== 200)).toEqual([]);
  });
});
