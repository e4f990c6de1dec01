import { describe, expect, it } from 'vitest';
import { runCliInProcess as runCli } from '../support/runCli.js';
import { writeCliConfig } from '../support/cliConfig.js';
import { makeTempDir } from '../support/tempDir.js';
import { startTestSimulator } from '../support/testSimulator.js';

// On a fresh store with discovery on, the store knows only the identity-provider log: a plan of
// "1 watched log" would ignore every object discovery is about to add.
describe('changefeed plan on a fresh store with discovery on', () => {
  it('reads the discovery lists (shown against the budget), or says plainly that it plans without them', async () => {
    const simulator = await startTestSimulator({
      seed: 31,
      careers: 4,
      skills: 3,
      eventsPerHour: 0,
      historyHours: 0,
      readsPerHour: 1_000_000,
    });
    const dir = makeTempDir();
    const config = writeCliConfig(dir, simulator.url, {
      extra: ['watch: { careers: { discover: true }, skills: { discover: true } }'],
    });
    const env = { CHANGEFEED_API_KEY: simulator.apiKey };

    const json = await runCli(['plan', '--config', config, '--json'], env);
    expect(json.status, json.stderr).toBe(0);
    const report = JSON.parse(json.stdout) as { watchedLogs: number; discovery: { state: string; requests: number } };
    expect(report.watchedLogs).toBe(1 + 4 + 3);
    expect(report.discovery).toEqual(expect.objectContaining({ state: 'read', requests: 2 }));

    const text = await runCli(['plan', '--config', config], env);
    expect(text.stdout).toMatch(/^plan \(adaptive, alpha [0-9.]+\) for 8 watched logs/);
    expect(text.stdout).toContain('read the lists now (2 requests of');

    const skipped = await runCli(['plan', '--config', config, '--no-discover']);
    expect(skipped.status, skipped.stderr).toBe(0);
    expect(skipped.stdout).toMatch(/for 1 watched logs/);
    expect(skipped.stdout).toContain('NOT RUN (--no-discover): this plan covers the configured logs only');
  }, 120_000);
});
