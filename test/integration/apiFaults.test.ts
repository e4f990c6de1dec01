import { describe, expect, it } from 'vitest';
import { eventIdFor } from '../../src/events/eventId.js';
import { startTestSimulator } from '../support/testSimulator.js';
import { storePath } from '../../src/store/sqlite/database.js';
import { buildStatusReport } from '../../src/cli/statusReport.js';
import {
  deliveredEvents,
  duplicatesOf,
  expectedEventIds,
  runOnce,
  simulatorConfig,
  testClock,
} from '../support/daemonHarness.js';
import { makeTempDir } from '../support/tempDir.js';
import { openSqliteStoreFile } from '../support/sqliteStoreFile.js';

const BACKFILL_ALL = '2000-01-01T00:00:00Z';
const quiet = { eventsPerHour: 0, historyHours: 0, readsPerHour: 1_000_000 } as const;

describe('polling through what goes wrong in production', () => {
  for (const sortOrder of ['newest-first', 'oldest-first'] as const) {
    it(`reads a burst of 12,000 entries in one career window completely (${sortOrder})`, async () => {
      const clock = testClock();
      const simulator = await startTestSimulator({
        clock,
        seed: 5,
        careers: 2,
        skills: 0,
        identityProviderShare: 0,
        sortOrder,
        ...quiet,
      });
      const careerId = simulator.careerIds[0] as string;
      const stateDir = makeTempDir();
      const config = simulatorConfig({ simulator, stateDir, overrides: { watch: { identityProviderEvents: false } } });
      expect((await runOnce(config, { clock })).ok).toBe(true);
      await clock.advance(60_000);
      const burst = simulator.appendBurst('career', careerId, 12_000, {
        from: clock.now() - 50_000,
        to: clock.now() - 1_000,
      });
      await clock.advance(5_000);
      const report = await runOnce(config, { clock });
      expect(report.ok, JSON.stringify(report.sweep.failures)).toBe(true);
      const ids = deliveredEvents(stateDir).map((e) => e.id);
      expect(duplicatesOf(ids)).toEqual([]);
      expect(new Set(ids)).toEqual(new Set(burst.map((e) => eventIdFor('career', careerId, e.id))));
    });
  }

  it('catches entries that arrive late with a performedAt inside the overlap', async () => {
    const clock = testClock();
    const simulator = await startTestSimulator({
      clock,
      seed: 9,
      careers: 3,
      skills: 2,
      eventsPerHour: 3_000,
      historyHours: 0,
      readsPerHour: 1_000_000,
      lateArrivals: { share: 0.3, maxDelaySeconds: 120 },
    });
    const stateDir = makeTempDir();
    const config = simulatorConfig({
      simulator,
      stateDir,
      startFrom: BACKFILL_ALL,
      overrides: { watch: { overlapSeconds: 300 } },
    });
    for (let i = 0; i < 10; i++) {
      expect((await runOnce(config, { clock })).ok).toBe(true);
      await clock.advance(30_000);
    }
    // Windows end at the service's clock, which the Date header gives to the second: what arrived
    // in the last second is read by the next sweep. Compare with what existed two seconds ago.
    const expected = expectedEventIds(simulator);
    await clock.advance(2_000);
    expect((await runOnce(config, { clock })).ok).toBe(true);
    const ids = deliveredEvents(stateDir).map((e) => e.id);
    expect(duplicatesOf(ids)).toEqual([]);
    const delivered = new Set(ids);
    expect(expected.filter((id) => !delivered.has(id))).toEqual([]);
    const visibleNow = new Set(expectedEventIds(simulator));
    expect(ids.filter((id) => !visibleNow.has(id))).toEqual([]);
  });

  it('emits entries with null performedAt or event, and keeps unknown fields verbatim', async () => {
    const clock = testClock();
    const simulator = await startTestSimulator({
      clock,
      seed: 21,
      careers: 3,
      skills: 3,
      eventsPerHour: 2_000,
      historyHours: 1,
      readsPerHour: 1_000_000,
      nullPerformedAtShare: 0.1,
      nullEventShare: 0.1,
      unknownFieldsShare: 0.2,
    });
    const visible = simulator.visibleEntries();
    const stateDir = makeTempDir();
    expect((await runOnce(simulatorConfig({ simulator, stateDir, startFrom: BACKFILL_ALL }), { clock })).ok).toBe(true);
    const byId = new Map(deliveredEvents(stateDir).map((e) => [e.data.id, e]));
    const undated = visible.filter((v) => v.entry.performedAt === null);
    const unnamed = visible.filter((v) => v.entry.event === null);
    const extra = visible.filter((v) => Object.keys(v.entry).some((k) => k.startsWith('x_')));
    expect(undated.length).toBeGreaterThan(10);
    expect(unnamed.length).toBeGreaterThan(10);
    expect(extra.length).toBeGreaterThan(10);
    for (const v of visible) expect(byId.get(v.entry.id)?.data).toEqual(v.entry);
    for (const v of undated) expect(byId.get(v.entry.id)?.time).toBeUndefined();
    for (const v of unnamed) expect(byId.get(v.entry.id)?.type).toMatch(/\.unspecified$/);
  });

  it('retries transient 5xx faults and malformed bodies until every entry is delivered', async () => {
    const clock = testClock();
    const simulator = await startTestSimulator({
      clock,
      seed: 13,
      careers: 5,
      skills: 4,
      eventsPerHour: 1_500,
      historyHours: 1,
      readsPerHour: 1_000_000,
      faults: { errorRate: 0.25, malformedRate: 0.1 },
    });
    const expected = expectedEventIds(simulator);
    const stateDir = makeTempDir();
    const report = await runOnce(simulatorConfig({ simulator, stateDir, startFrom: BACKFILL_ALL }), { clock });
    expect(report.ok, JSON.stringify(report.sweep.failures)).toBe(true);
    expect(simulator.requests.filter((r) => r.status >= 500).length).toBeGreaterThan(3);
    const ids = deliveredEvents(stateDir).map((e) => e.id);
    expect(duplicatesOf(ids)).toEqual([]);
    // Retries wait out their backoff in virtual time, during which the service goes on writing:
    // everything there at the start is delivered, and nothing that the service never wrote.
    const delivered = new Set(ids);
    expect(expected.filter((id) => !delivered.has(id))).toEqual([]);
    const written = new Set(expectedEventIds(simulator));
    expect(ids.filter((id) => !written.has(id))).toEqual([]);
  });

  it('stops watching a deleted career, says why, and keeps polling the others', async () => {
    const clock = testClock();
    const simulator = await startTestSimulator({
      clock,
      seed: 17,
      careers: 3,
      skills: 1,
      eventsPerHour: 1_000,
      historyHours: 1,
      readsPerHour: 1_000_000,
    });
    const [gone, ...kept] = simulator.careerIds as string[];
    const stateDir = makeTempDir();
    const config = simulatorConfig({ simulator, stateDir, startFrom: BACKFILL_ALL });
    expect((await runOnce(config, { clock })).ok).toBe(true);
    simulator.deleteObject('career', gone as string);
    await clock.advance(600_000);
    const report = await runOnce(config, { clock });
    expect(report.ok).toBe(true);
    const store = openSqliteStoreFile(storePath(stateDir));
    const watched = await store.watchedLogs.get('career', gone as string);
    await store.close();
    expect(watched?.status).toBe('gone');
    expect(watched?.statusReason).toMatch(/404/);
    const reopened = openSqliteStoreFile(storePath(stateDir));
    const logs = (await buildStatusReport(reopened, clock.now())).logs;
    await reopened.close();
    const coverage = logs.find((l) => l.objectId === gone);
    expect(coverage?.gap?.reason).toMatch(/^gone: .*404/);
    expect(coverage?.gap?.from).toBe(coverage?.coveredUntil);
    expect(logs.filter((l) => l.gap)).toHaveLength(1);
    const delivered = new Set(deliveredEvents(stateDir).map((e) => e.id));
    const keptCareerEntries = simulator
      .visibleEntries()
      .filter((v) => v.log === 'career' && kept.includes(v.objectId as string));
    expect(keptCareerEntries.length).toBeGreaterThan(0);
    for (const v of keptCareerEntries)
      expect(delivered.has(eventIdFor('career', v.objectId as string, v.entry.id as string))).toBe(true);
    // The deleted career was asked once in the second sweep, answered 404, and not asked again.
    const askedAfterDeletion = simulator.requests.filter(
      (r) => r.path.includes(`/careers/${gone}/`) && r.status === 404,
    );
    expect(askedAfterDeletion).toHaveLength(1);
  });

  it('sends nothing while a 429 Retry-After runs, then delivers everything', async () => {
    const clock = testClock();
    const simulator = await startTestSimulator({
      clock,
      seed: 19,
      careers: 3,
      skills: 2,
      eventsPerHour: 0,
      historyHours: 0,
      readsPerHour: 300,
    });
    simulator.appendBurst('career', simulator.careerIds[0] as string, 450, {
      from: clock.now() - 3_600_000,
      to: clock.now() - 1_000,
    });
    simulator.appendBurst('identity_provider', null, 50, { from: clock.now() - 3_600_000, to: clock.now() - 1_000 });
    const expected = expectedEventIds(simulator);
    simulator.spendReads(simulator.apiKey, 300);
    const stateDir = makeTempDir();
    const report = await runOnce(simulatorConfig({ simulator, stateDir, startFrom: BACKFILL_ALL }), { clock });
    expect(report.ok, JSON.stringify(report.sweep.failures)).toBe(true);
    const limited = simulator.requests.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThanOrEqual(1);
    const firstLimited = limited[0]!;
    // The bucket opened when the other client spent it, at the clock's start; it resets an hour later.
    const resetAt = testClock().now() + 3_600_000;
    const during = simulator.requests.filter((r) => r.at > firstLimited.at && r.at < resetAt);
    expect(during).toEqual([]);
    expect(limited.length).toBe(1);
    expect(new Set(deliveredEvents(stateDir).map((e) => e.id))).toEqual(new Set(expected));
  });
});
