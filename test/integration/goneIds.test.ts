import { describe, expect, it } from 'vitest';
import { runCliInProcess as runCli } from '../support/runCli.js';
import { writeCliConfig } from '../support/cliConfig.js';
import { makeTempDir } from '../support/tempDir.js';
import { runOnce, simulatorConfig, testClock } from '../support/daemonHarness.js';
import { startTestSimulator } from '../support/testSimulator.js';

// A configured id the service does not know is no silent success: run --once names it and exits
// 1, and `watch retry` is the way back for a gone log.
describe('a configured career that does not exist', () => {
  it('fails run --once naming the id, and watch retry brings it back once the service knows it', async () => {
    const simulator = await startTestSimulator({
      seed: 12,
      careers: 1,
      skills: 0,
      eventsPerHour: 0,
      historyHours: 0,
      readsPerHour: 1_000_000,
    });
    const dir = makeTempDir();
    const known = simulator.careerIds[0] as string;
    const config = writeCliConfig(dir, simulator.url, {
      extra: [`watch: { careers: { ids: ["${known}", "career_typo"] }, identityProviderEvents: false }`],
    });
    const env = { CHANGEFEED_API_KEY: simulator.apiKey };
    const once = await runCli(['run', '--config', config, '--once'], env);
    expect(once.status, once.stderr).toBe(1);
    expect(once.stderr).toContain('configured career career_typo does not exist');
    expect(once.stderr).toContain('changefeed watch retry career career_typo');

    const stillGone = await runCli(['watch', 'retry', 'career', 'career_typo', '--config', config], env);
    expect(stillGone.status, stillGone.stderr).toBe(1);
    expect(stillGone.stdout).toContain('still answers 404');
    expect(stillGone.stdout).toContain('1 request of the key');

    const notGone = await runCli(['watch', 'retry', 'career', known, '--config', config], env);
    expect(notGone.stdout).toContain('is active, not gone');

    simulator.addObject('career', 'career_typo');
    const back = await runCli(['watch', 'retry', 'career', 'career_typo', '--config', config], env);
    expect(back.status, back.stdout + back.stderr).toBe(0);
    expect(back.stdout).toContain('answers again');
    const again = await runCli(['run', '--config', config, '--once'], env);
    expect(again.status, again.stderr).toBe(0);
    const status = JSON.parse((await runCli(['status', '--config', config, '--json'])).stdout) as {
      logs: { objectId: string; status: string }[];
    };
    expect(status.logs.find((l) => l.objectId === 'career_typo')?.status).toBe('active');
  }, 180_000);

  it('watch retry refuses a log kind that cannot be gone', async () => {
    const result = await runCli(['watch', 'retry', 'identity_provider', 'x']);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('Allowed choices are career, skill');
  }, 60_000);

  it('is found by run --once even when the sweep comes in the same instant as its registration', async () => {
    // A virtual clock that does not move: the first window of every log is empty. A log never
    // read before must still be asked for once, or a typo passes run --once unnoticed.
    const clock = testClock();
    const simulator = await startTestSimulator({
      clock,
      seed: 12,
      careers: 1,
      skills: 0,
      eventsPerHour: 0,
      historyHours: 0,
      readsPerHour: 1_000_000,
    });
    const stateDir = makeTempDir();
    const config = simulatorConfig({
      simulator,
      stateDir,
      overrides: {
        watch: {
          careers: { ids: [simulator.careerIds[0], 'career_typo'] },
          skills: { discover: false },
          identityProviderEvents: false,
          schedule: { historyHours: 0 },
        },
      },
    });
    const report = await runOnce(config, { clock });
    expect(report.gone.map((g) => g.objectId)).toEqual(['career_typo']);
    expect(report.ok).toBe(false);
  });
});
