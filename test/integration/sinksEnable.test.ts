import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeCliConfig } from '../support/cliConfig.js';
import { prefilledStore } from '../support/prefilledStore.js';
import { runCliInProcess } from '../support/runCli.js';
import { makeTempDir } from '../support/tempDir.js';
import { SECRET } from '../support/webhookHarness.js';

const REASON = 'every attempt failed for 5 days (16 in a row; disableAfterSeconds 432000)';

describe('changefeed sinks enable', () => {
  it('enables a sink disabled by an earlier run, which status names with the command to run', async () => {
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
    const config = writeCliConfig(dir, 'http://127.0.0.1:9', {
      sinks: [`  - { name: hook, type: webhook, url: "http://127.0.0.1:9/hook", secret: "${SECRET}" }`],
    });

    const before = await runCliInProcess(['status', '--config', config]);
    expect(before.status).toBe(0);
    expect(before.stdout).toContain(`disabled: ${REASON} (fix it, then: changefeed sinks enable hook)`);

    const enabled = await runCliInProcess(['sinks', 'enable', 'hook', '--config', config]);
    expect(enabled).toMatchObject({ status: 0, stdout: expect.stringContaining('sink hook enabled') });
    const again = await runCliInProcess(['sinks', 'enable', 'hook', '--config', config]);
    expect(again).toMatchObject({ status: 1, stdout: 'sink hook was not disabled\n' });
    const unknown = await runCliInProcess(['sinks', 'enable', 'nope', '--config', config]);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain('no sink named "nope"');

    const after = await runCliInProcess(['status', '--config', config, '--json']);
    const [sink] = (JSON.parse(after.stdout) as { sinks: { disabledReason: unknown; failingSince: unknown }[] }).sinks;
    expect(sink).toMatchObject({ disabledReason: null, failingSince: null });
  });
});
