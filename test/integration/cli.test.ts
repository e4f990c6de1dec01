import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startTestSimulator } from '../support/testSimulator.js';
import { runCliInProcess as runCli } from '../support/runCli.js';
import { makeTempDir } from '../support/tempDir.js';

describe('the changefeed command', () => {
  it('rejects an invalid config with exit code 2 and names each bad field', async () => {
    const dir = makeTempDir();
    const file = join(dir, 'bad.yaml');
    writeFileSync(
      file,
      [
        'api:',
        '  baseUrl: not-a-url',
        '  apiKey: sekret-value-123',
        'watch:',
        '  overlapSecond: 10',
        'sinks:',
        '  - { name: out, type: file }',
      ].join('\n'),
    );
    const result = await runCli(['check', '--config', file]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('api.baseUrl');
    expect(result.stderr).toContain('overlapSecond');
    expect(result.stderr).toContain('overlapSeconds');
    expect(result.stderr).toContain('sinks[0].path');
    expect(result.stderr).not.toContain('sekret-value-123');
  });

  it('check pings the service and status reports cursors and sink progress after run --once', async () => {
    const simulator = await startTestSimulator({
      seed: 4,
      careers: 2,
      skills: 1,
      eventsPerHour: 600,
      historyHours: 1,
      readsPerHour: 1_000_000,
    });
    const dir = makeTempDir();
    const file = join(dir, 'changefeed.yaml');
    writeFileSync(
      file,
      [
        'api:',
        `  baseUrl: ${simulator.url}`,
        'watch: { careers: { discover: true }, skills: { discover: true }, startFrom: "2000-01-01T00:00:00Z" }',
        'budget: { readsPerHour: 3600000, reserve: 0 }',
        `stateDir: ${join(dir, 'state')}`,
        `sinks: [{ name: out, type: file, path: ${join(dir, 'events.jsonl')} }]`,
      ].join('\n'),
    );
    const keyFile = join(dir, 'api-key');
    writeFileSync(keyFile, `${simulator.apiKey}\n`);
    const env = { CHANGEFEED_API_KEY: simulator.apiKey };
    const check = await runCli(['check', '--config', file], env);
    expect(check.status).toBe(0);
    expect(check.stdout).toContain('ping: the service accepted the key');
    const badKey = await runCli(['check', '--config', file], {
      CHANGEFEED_API_KEY: 'sim_live_wrongwrongwrongwrongwrongwrong12',
    });
    expect(badKey.status).toBe(1);
    expect(badKey.stdout).toContain('check CHANGEFEED_API_KEY');
    expect(badKey.stdout + badKey.stderr).not.toContain('wrongwrongwrong');
    const once = await runCli(['run', '--config', file, '--once'], env);
    expect(once.status, once.stderr).toBe(0);
    // Inspection commands need no credential and no sink secrets: a config with an unreadable key
    // file and a webhook whose URL and secret come from variables not set here still works.
    const keyNotMounted = readFileSync(file, 'utf8').replace(
      `  baseUrl: ${simulator.url}`,
      `  baseUrl: ${simulator.url}\n  apiKeyFile: ${join(dir, 'not-mounted-here')}`,
    );
    const inspectConfig = join(dir, 'inspect.yaml');
    writeFileSync(
      inspectConfig,
      keyNotMounted.replace(
        'sinks: [',
        'sinks: [{ name: hook, type: webhook, url: "${HOOK_URL}", secret: "${HOOK_SECRET}" }, ',
      ),
    );
    const status = await runCli(['status', '--config', inspectConfig, '--json']);
    expect(status.status).toBe(0);
    const report = JSON.parse(status.stdout) as {
      logs: { log: string; status: string }[];
      sinks: { name: string; pending: number; delivered: number }[];
    };
    expect(report.logs.map((l) => l.log).sort()).toEqual(['career', 'career', 'identity_provider', 'skill']);
    expect(report.sinks).toEqual([expect.objectContaining({ name: 'out', pending: 0 })]);
    expect(report.sinks[0]?.delivered).toBeGreaterThan(0);
    const letters = await runCli(['dead-letters', 'list', '--config', inspectConfig]);
    expect(letters.stdout).toBe('no dead letters\n');
    const plan = await runCli(['plan', '--config', inspectConfig]);
    expect(plan.status, plan.stderr).toBe(0);
    // run --once recorded what each poll saw, so the plan starts from learned state, not the prior.
    expect(plan.stdout).toMatch(/^plan \(adaptive, alpha [0-9.]+\) for 4 watched logs, 4 with learned rates/);
    // A command that delivers still needs them, and says which.
    const replay = await runCli([
      'replay',
      '--config',
      inspectConfig,
      '--sink',
      'hook',
      '--since',
      '2000-01-01T00:00:00Z',
    ]);
    expect(replay.status).toBe(2);
    expect(replay.stderr).toContain('HOOK_URL');
    // The key from a file (trailing newline dropped), with no CHANGEFEED_API_KEY around.
    const keyFileConfig = join(dir, 'keyfile.yaml');
    writeFileSync(
      keyFileConfig,
      readFileSync(file, 'utf8').replace(
        `  baseUrl: ${simulator.url}`,
        `  baseUrl: ${simulator.url}\n  apiKeyFile: ${keyFile}`,
      ),
    );
    const viaKeyFile = await runCli(['run', '--config', keyFileConfig, '--once'], { CHANGEFEED_API_KEY: '' });
    expect(viaKeyFile.status, viaKeyFile.stderr).toBe(0);
    const missingKeyFileConfig = join(dir, 'missing-key-file.yaml');
    writeFileSync(missingKeyFileConfig, keyNotMounted);
    const missingKeyFile = await runCli(['run', '--config', missingKeyFileConfig, '--once'], {
      CHANGEFEED_API_KEY: '',
    });
    expect(missingKeyFile.status).toBe(1);
    expect(missingKeyFile.stderr).toContain('not-mounted-here');
    expect(missingKeyFile.stderr).not.toContain('API_CONNECTION');
  });
});
