import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { ChangefeedDaemon } from '../../src/daemon/changefeedDaemon.js';
import { createLogger } from '../../src/observe/createLogger.js';
import { writeCliConfig } from '../support/cliConfig.js';
import { createDaemon, simulatorConfig, testClock } from '../support/daemonHarness.js';
import { prefilledStore } from '../support/prefilledStore.js';
import { runCliInProcess } from '../support/runCli.js';
import { openSqliteStoreFile } from '../support/sqliteStoreFile.js';
import { makeTempDir } from '../support/tempDir.js';
import { startTestSimulator } from '../support/testSimulator.js';
import { receiver, SECRET } from '../support/webhookHarness.js';

const REASON = 'every attempt failed for 5 days (16 in a row; disableAfterSeconds 432000)';

/** A logger, and a promise for the first line whose message starts with `message`. */
function loggerAwaiting(message: string) {
  const out = new PassThrough();
  let rest = '';
  const seen = new Promise<void>((resolve) => {
    out.on('data', (chunk: Buffer) => {
      const lines = (rest + chunk.toString()).split('\n');
      rest = lines.pop() ?? '';
      if (lines.some((line) => line !== '' && (JSON.parse(line) as { msg: string }).msg.startsWith(message))) resolve();
    });
  });
  return { logger: createLogger({ destination: out }), seen };
}

describe('changefeed sinks enable, then an immediate stop', () => {
  // The worker looks at the store for an enable every 5 s; a daemon stopped before then recorded
  // its state at close, still disabled, over the operator's enable.
  it('keeps the sink enabled: the stopping daemon does not write its stale disabled state over it', async () => {
    const simulator = await startTestSimulator({
      seed: 3,
      careers: 1,
      skills: 0,
      eventsPerHour: 0,
      historyHours: 0,
      readsPerHour: 1_000_000,
    });
    let releaseDelivered: () => void = () => undefined;
    const delivered = new Promise<void>((resolve) => (releaseDelivered = resolve));
    const hook = await receiver({ respond: (_r, n) => (n === 2 && releaseDelivered(), { status: 204 }) });
    const dir = makeTempDir();
    const stateDir = join(dir, 'state');
    mkdirSync(stateDir);
    const { store } = await prefilledStore(2, [{ name: 'hook', type: 'webhook' }], 1, stateDir);
    await store.sinks.recordState({
      sink: 'hook',
      connected: false,
      pausedUntil: 0,
      consecutiveFailures: 16,
      lastError: REASON,
      lastErrorAt: Date.now(),
      lastDeliveryAt: null,
      circuit: 'open',
      disabledReason: REASON,
      failingSince: Date.now() - 5 * 86_400_000,
    });
    await store.close();
    const hookSink = { name: 'hook', type: 'webhook', url: hook.url, secret: SECRET };
    const cliConfig = writeCliConfig(dir, simulator.url, {
      sinks: [`  - { name: hook, type: webhook, url: "${hook.url}", secret: "${SECRET}" }`],
    });
    const config = simulatorConfig({ simulator, stateDir, overrides: { sinks: [hookSink] } });
    // The clock stands still, so the worker's next look for an enable never comes before the stop.
    const clock = testClock();

    const disabledSeen = loggerAwaiting('sink disabled by an earlier run');
    const first: ChangefeedDaemon = createDaemon(config, { clock, logger: disabledSeen.logger });
    await first.start();
    await disabledSeen.seen;
    const enabled = await runCliInProcess(['sinks', 'enable', 'hook', '--config', cliConfig]);
    expect(enabled).toMatchObject({ status: 0, stdout: expect.stringContaining('sink hook enabled') });
    await first.stop();

    const reopened = openSqliteStoreFile(join(stateDir, 'changefeed.sqlite'));
    expect((await reopened.sinks.list())[0]).toMatchObject({ disabledReason: null, failingSince: null });
    await reopened.close();

    const second = createDaemon(config, { clock });
    await second.start();
    await delivered;
    await second.stop();
    expect(hook.count).toBe(2);
    expect(second.readiness().find((c) => c.name === 'sink:hook')?.detail ?? '').not.toContain('disabled');
    await simulator.close();
  });
});
