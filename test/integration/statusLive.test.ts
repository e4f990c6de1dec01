import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, until } from '../support/daemonProcess.js';
import { runCliInProcess as runCli, startCliInProcess, type InProcessCommand } from '../support/runCli.js';
import { makeTempDir } from '../support/tempDir.js';
import { startTestSimulator } from '../support/testSimulator.js';

let daemon: InProcessCommand | undefined;
afterEach(async () => {
  await daemon?.stop();
  daemon = undefined;
});

interface SinkRow {
  name: string;
  active: boolean;
  connected: boolean;
  stateSource: string;
}

async function statusSinks(
  config: string,
): Promise<{ sinks: SinkRow[]; daemon: { reachable: boolean }; text: string }> {
  const json = await runCli(['status', '--config', config, '--json']);
  expect(json.status, json.stderr).toBe(0);
  const text = await runCli(['status', '--config', config]);
  return { ...(JSON.parse(json.stdout) as { sinks: SinkRow[]; daemon: { reachable: boolean } }), text: text.stdout };
}

// The store's recorded `connected` is not the truth while a daemon runs: a webhook whose receiver
// refuses every connection must not show "connected yes", nor a sink removed from the config
// "active yes".
describe('changefeed status', () => {
  it('shows sink state live from the running daemon, and marks recorded values once it is gone', async () => {
    const simulator = await startTestSimulator({
      seed: 8,
      careers: 1,
      skills: 0,
      eventsPerHour: 0,
      historyHours: 0,
      readsPerHour: 1_000_000,
    });
    const dir = makeTempDir();
    const httpPort = await freePort();
    const refusing = await freePort(); // nothing listens here
    const config = join(dir, 'changefeed.yaml');
    const lines = (sinks: string[]): string =>
      [
        `api: { baseUrl: "${simulator.url}" }`,
        'budget: { readsPerHour: 3600000, reserve: 0 }',
        `stateDir: ${join(dir, 'state')}`,
        `http: { port: ${httpPort} }`,
        'sinks:',
        ...sinks,
      ].join('\n');
    const fileSink = `  - { name: out, type: file, path: ${join(dir, 'events.jsonl')} }`;
    const hookSink = `  - { name: hook, type: webhook, url: "http://127.0.0.1:${refusing}/hooks" }`;
    writeFileSync(config, lines([fileSink, hookSink]));
    daemon = startCliInProcess(['run', '--config', config], { CHANGEFEED_API_KEY: simulator.apiKey });
    await daemon.waitForLog('changefeed running', 60_000);

    let live: Awaited<ReturnType<typeof statusSinks>> | undefined;
    await until(
      async () => {
        live = await statusSinks(config);
        return live.sinks.some((s) => s.name === 'out' && s.connected);
      },
      60_000,
      'status showing the file sink connected',
    );
    expect(live?.daemon.reachable).toBe(true);
    expect(live?.sinks).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'out', active: true, connected: true, stateSource: 'live' }),
        expect.objectContaining({ name: 'hook', active: true, connected: false, stateSource: 'live' }),
      ]),
    );
    expect(live?.text).toContain('sink state: live from the running daemon');

    expect(await daemon.stop()).toBe(0);
    // The webhook sink is gone from the config now; the daemon no longer answers.
    writeFileSync(config, lines([fileSink]));
    const recorded = await statusSinks(config);
    expect(recorded.daemon.reachable).toBe(false);
    expect(recorded.sinks).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'out', active: true, stateSource: 'recorded' }),
        expect.objectContaining({ name: 'hook', active: false, connected: false, stateSource: 'recorded' }),
      ]),
    );
    expect(recorded.text).toContain('(recorded)');
  }, 180_000);
});
