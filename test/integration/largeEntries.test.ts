import { describe, expect, it } from 'vitest';
import { eventIdFor } from '../../src/events/eventId.js';
import { storePath } from '../../src/store/sqlite/database.js';
import { deliveredEvents, duplicatesOf, runOnce, simulatorConfig, testClock } from '../support/daemonHarness.js';
import { startRewritingProxy, type ProxiedAnswer } from '../support/rewritingProxy.js';
import { openSqliteStoreFile } from '../support/sqliteStoreFile.js';
import { makeTempDir } from '../support/tempDir.js';
import { startTestSimulator } from '../support/testSimulator.js';

const MAX_RESPONSE_BYTES = 1_048_576;

/** Pads every career activity entry to about `bytes` (the entry `oversized` far beyond the response cap). */
function padEntries(bytes: number, oversized?: string) {
  return (answer: ProxiedAnswer): ProxiedAnswer => {
    if (!/\/careers\/[^/]+\/activity/.test(answer.path) || answer.status !== 200) return answer;
    const body = JSON.parse(answer.body) as { data: { id: string }[] };
    const data = body.data.map((entry) => ({
      ...entry,
      padding: 'x'.repeat(entry.id === oversized ? MAX_RESPONSE_BYTES + 200_000 : bytes),
    }));
    return { ...answer, body: JSON.stringify({ ...body, data }) };
  };
}

async function largeEntryLog(seed: number, oversizedAt?: number) {
  const clock = testClock();
  const simulator = await startTestSimulator({
    clock,
    seed,
    careers: 1,
    skills: 0,
    identityProviderShare: 0,
    eventsPerHour: 0,
    historyHours: 0,
    readsPerHour: 1_000_000,
  });
  const careerId = simulator.careerIds[0] as string;
  const stateDir = makeTempDir();
  const written = simulator.appendBurst('career', careerId, 30, {
    from: clock.now() - 3_000_000,
    to: clock.now() - 60_000,
  });
  const oversized = oversizedAt === undefined ? undefined : written[oversizedAt]?.id;
  const baseUrl = await startRewritingProxy(simulator.url, padEntries(100_000, oversized));
  const config = simulatorConfig({
    simulator,
    stateDir,
    startFrom: new Date(clock.now() - 3_600_000).toISOString(),
    overrides: {
      watch: { identityProviderEvents: false, careers: { ids: [careerId] }, skills: { discover: false } },
    },
  });
  const run = () =>
    runOnce(
      { ...config, api: { ...config.api, baseUrl, maxResponseBytes: MAX_RESPONSE_BYTES, maxEntryBytes: 4_194_304 } },
      { clock },
    );
  return { careerId, stateDir, written, oversized, run };
}

// Thirty entries of 100 KB make a page of 3 MB, three times api.maxResponseBytes: with pages of
// 200 every read was refused and the log never advanced.
describe('a log whose entries are too large for a full page', () => {
  it('is read in smaller pages and advances', async () => {
    const { careerId, stateDir, written, run } = await largeEntryLog(61);
    const report = await run();
    expect(report.ok, JSON.stringify(report.sweep.failures)).toBe(true);
    const ids = deliveredEvents(stateDir).map((e) => e.id);
    expect(duplicatesOf(ids)).toEqual([]);
    expect(new Set(ids)).toEqual(new Set(written.map((e) => eventIdFor('career', careerId, e.id))));
  }, 120_000);

  it('quarantines an entry too large for a page of its own, naming where it is, and reads the rest', async () => {
    const { careerId, stateDir, written, oversized, run } = await largeEntryLog(62, 10);
    const report = await run();
    expect(report.ok, JSON.stringify(report.sweep.failures)).toBe(true);
    const ids = new Set(deliveredEvents(stateDir).map((e) => e.id));
    const expected = written.filter((e) => e.id !== oversized).map((e) => eventIdFor('career', careerId, e.id));
    expect(ids).toEqual(new Set(expected));
    const store = openSqliteStoreFile(storePath(stateDir));
    try {
      const records = await store.quarantine.list();
      expect(records).toHaveLength(1);
      expect(records[0]).toMatchObject({ log: 'career', objectId: careerId });
      expect(records[0]?.reason).toMatch(
        /^the entry at offset \d+ of \S+Z\.\.\S+Z is larger than api\.maxResponseBytes \(1048576\) on a page of its own/,
      );
      expect(records[0]?.raw).toContain(oversized);
    } finally {
      await store.close();
    }
  }, 120_000);
});
