import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { eventIdFor } from '../../src/events/eventId.js';
import { storePath } from '../../src/store/sqlite/database.js';
import { buildStatusReport } from '../../src/cli/statusReport.js';
import { deliveredEvents, duplicatesOf, runOnce, simulatorConfig, testClock } from '../support/daemonHarness.js';
import { startRewritingProxy, type ProxiedAnswer } from '../support/rewritingProxy.js';
import { runCliInProcess as runCli } from '../support/runCli.js';
import { makeTempDir } from '../support/tempDir.js';
import { startTestSimulator } from '../support/testSimulator.js';
import { openSqliteStoreFile } from '../support/sqliteStoreFile.js';

const BAD_ENTRIES = [
  { event: 'level_added', performedAt: '2026-11-22T11:59:00Z', description: 'no id at all' },
  { id: 42, event: 'level_added', performedAt: '2026-11-22T11:59:00Z' },
  { id: 'bad-time', event: 'level_added', performedAt: 'yesterday-ish' },
  { id: 'huge', event: 'level_added', performedAt: '2026-11-22T11:59:00Z', description: 'x'.repeat(5_000) },
];

/** Adds `extra` to the data of every career activity page the service sends. */
function withExtraEntries(extra: unknown[]) {
  return (answer: ProxiedAnswer): ProxiedAnswer => {
    if (!/\/careers\/[^/]+\/activity/.test(answer.path) || answer.status !== 200) return answer;
    const body = JSON.parse(answer.body) as { data: unknown[] };
    return { ...answer, body: JSON.stringify({ ...body, data: [...body.data, ...extra] }) };
  };
}

// One entry with no id, a non-string id or an unparseable performedAt made the whole page rejected
// on every poll: the log never advanced.
describe('an activity page holding entries that cannot become events', () => {
  it('quarantines them, emits the rest and advances the cursor', async () => {
    const clock = testClock();
    const simulator = await startTestSimulator({
      clock,
      seed: 51,
      careers: 1,
      skills: 0,
      identityProviderShare: 0,
      eventsPerHour: 0,
      historyHours: 0,
      readsPerHour: 1_000_000,
    });
    const careerId = simulator.careerIds[0] as string;
    const baseUrl = await startRewritingProxy(simulator.url, withExtraEntries(BAD_ENTRIES));
    const stateDir = makeTempDir();
    const config = simulatorConfig({
      simulator,
      stateDir,
      overrides: {
        watch: { identityProviderEvents: false, careers: { ids: [careerId] }, skills: { discover: false } },
      },
    });
    const hostile = { ...config, api: { ...config.api, baseUrl, maxEntryBytes: 4_096 } };

    expect((await runOnce(hostile, { clock })).ok).toBe(true);
    const written = [];
    for (let sweep = 0; sweep < 2; sweep++) {
      await clock.advance(60_000);
      written.push(
        ...simulator.appendBurst('career', careerId, 4, { from: clock.now() - 50_000, to: clock.now() - 1_000 }),
      );
      await clock.advance(2_000);
      const report = await runOnce(hostile, { clock });
      expect(report.ok, JSON.stringify(report.sweep.failures)).toBe(true);
    }
    const ids = deliveredEvents(stateDir).map((e) => e.id);
    expect(duplicatesOf(ids)).toEqual([]);
    expect(new Set(ids)).toEqual(new Set(written.map((e) => eventIdFor('career', careerId, e.id))));

    const store = openSqliteStoreFile(storePath(stateDir));
    try {
      // Read on every poll, recorded once each.
      const records = await store.quarantine.list();
      const reasons = records.map((r) => r.reason);
      expect(reasons).toHaveLength(4);
      for (const pattern of [
        /: id: Invalid input: expected string, received undefined$/,
        /: id: Invalid input: expected string, received number$/,
        /: performedAt: performedAt is not an ISO 8601 timestamp$/,
        /: the entry is \d+ bytes, more than api.maxEntryBytes \(4096\)$/,
      ]) {
        expect(
          reasons.filter((r) => pattern.test(r)),
          String(pattern),
        ).toHaveLength(1);
      }
      expect(records.every((r) => r.log === 'career' && r.objectId === careerId)).toBe(true);
      expect(records.find((r) => r.entryId === 'bad-time')?.raw).toContain('yesterday-ish');
      const status = await buildStatusReport(store, clock.now());
      expect(status.quarantinedEntries).toBe(4);
      expect(status.logs[0]?.consecutiveFailures).toBe(0);
    } finally {
      await store.close();
    }
    const configFile = join(stateDir, 'inspect.yaml');
    writeFileSync(
      configFile,
      `stateDir: ${stateDir}\nsinks: [{ name: file, type: file, path: ${join(stateDir, 'events.jsonl')} }]\n`,
    );
    const listed = await runCli(['quarantine', 'list', '--config', configFile]);
    expect(listed.status, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(`career ${careerId}  entry bad-time`);
    expect(listed.stdout).toContain('reason: data[');
    expect(listed.stdout).toContain('yesterday-ish');
    const json = JSON.parse(
      (await runCli(['quarantine', 'list', '--config', configFile, '--json'])).stdout,
    ) as unknown[];
    expect(json).toHaveLength(4);
  }, 120_000);

  it(
    'treats a page with more entries than the limit asked for as a protocol error, not ' + 'something to swallow',
    async () => {
      const clock = testClock();
      const simulator = await startTestSimulator({
        clock,
        seed: 52,
        careers: 1,
        skills: 0,
        identityProviderShare: 0,
        eventsPerHour: 0,
        historyHours: 0,
        readsPerHour: 1_000_000,
      });
      const careerId = simulator.careerIds[0] as string;
      const flood = Array.from({ length: 201 }, (_, i) => ({
        id: `flood-${i}`,
        event: 'x',
        performedAt: '2026-11-22T11:59:00Z',
      }));
      const baseUrl = await startRewritingProxy(simulator.url, withExtraEntries(flood));
      const stateDir = makeTempDir();
      const config = simulatorConfig({
        simulator,
        stateDir,
        startFrom: '2026-11-22T11:00:00Z',
        overrides: {
          watch: { identityProviderEvents: false, careers: { ids: [careerId] }, skills: { discover: false } },
        },
      });
      const report = await runOnce({ ...config, api: { ...config.api, baseUrl } }, { clock });
      expect(report.ok).toBe(false);
      expect(report.sweep.failures[0]?.error).toMatch(
        /API_MALFORMED_RESPONSE: .* holds more than the 200 entries the limit asked for/,
      );
      expect(deliveredEvents(stateDir)).toEqual([]);
    },
  );
});
