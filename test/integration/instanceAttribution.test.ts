import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  deliveredEvents,
  duplicatesOf,
  expectedEventIds,
  runOnce,
  simulatorConfig,
  testClock,
} from '../support/daemonHarness.js';
import { startDaemonProcess, until, type DaemonProcess } from '../support/daemonProcess.js';
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
    const byCompany = (company: number) => simulator.requests.filter((r) => r.company === company);
    expect(byCompany(0).length).toBeGreaterThan(5);
    expect(byCompany(1).length).toBeGreaterThan(5);
    expect(new Set(byCompany(0).map((r) => r.instanceId))).toEqual(new Set(['replica-a']));
    expect(new Set(byCompany(1).map((r) => r.instanceId))).toEqual(new Set(['replica-b']));
    expect(simulator.requests.filter((r) => r.company === null || r.status !== 200)).toEqual([]);
  });
});

describe('changefeed run with CHANGEFEED_INSTANCE_ID', () => {
  let daemon: DaemonProcess | undefined;
  afterEach(async () => {
    if (daemon && daemon.child.exitCode === null) {
      daemon.child.kill('SIGKILL');
      await daemon.exited();
    }
    daemon = undefined;
  });

  it('a real process names itself in its start log and in every request, for its company only', async () => {
    const simulator = await startTestSimulator({
      seed: 15,
      companies: 2,
      careers: 1,
      skills: 1,
      eventsPerHour: 0,
      historyHours: 0,
      readsPerHour: 1_000_000,
    });
    const dir = makeTempDir();
    const config = join(dir, 'changefeed.yaml');
    writeFileSync(
      config,
      [
        `api: { baseUrl: "${simulator.url}" }`,
        'watch: { careers: { discover: true }, skills: { discover: true } }',
        'budget: { readsPerHour: 3600000, reserve: 0 }',
        `stateDir: ${join(dir, 'state')}`,
        `sinks: [{ name: out, type: file, path: ${join(dir, 'events.jsonl')} }]`,
      ].join('\n'),
    );
    daemon = startDaemonProcess(['--config', config], {
      CHANGEFEED_API_KEY: simulator.companies[1]!.apiKey,
      CHANGEFEED_INSTANCE_ID: 'changefeed-7d9f8b6c5-x2k4q',
    });
    await daemon.waitForLog('changefeed running', 60_000);
    expect(daemon.logs()).toMatch(/"instanceId":"changefeed-7d9f8b6c5-x2k4q"[^\n]*"msg":"changefeed running"/);
    // The start-up ping and discovery of both lists.
    await until(() => simulator.requests.length >= 3, 30_000, 'the daemon to poll');
    expect(new Set(simulator.requests.map((r) => `${r.company} ${r.instanceId}`))).toEqual(
      new Set(['1 changefeed-7d9f8b6c5-x2k4q']),
    );
  }, 90_000);
});
