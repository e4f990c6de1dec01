import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startTestSimulator } from '../support/testSimulator.js';
import { deliveredEvents, expectedEventIds, runOnce, simulatorConfig } from '../support/daemonHarness.js';
import { makeTempDir } from '../support/tempDir.js';
import { receiver, SECRET } from '../support/webhookHarness.js';
import { openSqliteStoreFile } from '../support/sqliteStoreFile.js';

describe('sink isolation', () => {
  it('a webhook endpoint that never answers holds up neither polling nor the file sink', async () => {
    const simulator = await startTestSimulator({
      seed: 31,
      careers: 4,
      skills: 2,
      eventsPerHour: 0,
      historyHours: 0,
      readsPerHour: 1_000_000,
    });
    simulator.appendBurst('career', simulator.careerIds[0] as string, 300, {
      from: Date.now() - 600_000,
      to: Date.now() - 5_000,
    });
    // Neither the answer nor the sink's timeout comes before the test would time out: a daemon held
    // up by this endpoint could only end with a timed-out test, however slow the machine is.
    const hanging = await receiver({ respond: () => ({ delayMs: 600_000 }) });
    const stateDir = makeTempDir();
    const config = simulatorConfig({
      simulator,
      stateDir,
      startFrom: '2000-01-01T00:00:00Z',
      overrides: {
        sinks: [
          { name: 'file', type: 'file', path: join(stateDir, 'events.jsonl') },
          { name: 'stuck', type: 'webhook', url: hanging.url, secret: SECRET, timeoutMs: 300_000 },
        ],
      },
    });
    const daemon = (await import('../support/daemonHarness.js')).createDaemon(config);
    const report = await daemon.runOnce(2_000);
    await daemon.stop();
    expect(report.sweep.failures).toEqual([]);
    expect(new Set(deliveredEvents(stateDir).map((e) => e.id))).toEqual(new Set(expectedEventIds(simulator)));
    const stuck = report.sinks.find((s) => s.sink === 'stuck');
    expect(stuck?.drained).toBe(false);
    expect(stuck?.pending).toBe(300);
    expect(report.ok).toBe(false);
  });

  it('run --once reports dead letters as a failure; dead-letters retry sends them again', async () => {
    const simulator = await startTestSimulator({
      seed: 37,
      careers: 1,
      skills: 0,
      identityProviderShare: 0,
      eventsPerHour: 0,
      historyHours: 0,
      readsPerHour: 1_000_000,
    });
    simulator.appendBurst('career', simulator.careerIds[0] as string, 3, {
      from: Date.now() - 60_000,
      to: Date.now() - 5_000,
    });
    let accept = false;
    const hook = await receiver({ respond: () => ({ status: accept ? 204 : 400, body: 'schema mismatch' }) });
    const stateDir = makeTempDir();
    const config = simulatorConfig({
      simulator,
      stateDir,
      startFrom: '2000-01-01T00:00:00Z',
      overrides: { sinks: [{ name: 'hook', type: 'webhook', url: hook.url, secret: SECRET }] },
    });
    const first = await runOnce(config);
    expect(first.ok).toBe(false);
    expect(first.sinks).toEqual([expect.objectContaining({ sink: 'hook', dead: 3, pending: 0 })]);
    const store = openSqliteStoreFile(join(stateDir, 'changefeed.sqlite'));
    expect((await store.deadLetters.list()).map((d) => [d.lastStatus, d.lastResponse])).toEqual(
      Array(3).fill([400, 'schema mismatch']),
    );
    // Dead letters of an earlier run were reported by it: a run that adds none succeeds.
    const unchanged = await runOnce(config);
    expect(unchanged.ok).toBe(true);
    accept = true;
    expect(await store.deadLetters.requeueSink('hook', Date.now())).toBe(3);
    await store.close();
    const second = await runOnce(config);
    expect(second.ok).toBe(true);
    expect(hook.received.filter((r) => r.verified)).toHaveLength(6);
  });
});
