import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort } from '../support/daemonProcess.js';
import { runCliInProcess as runCli } from '../support/runCli.js';
import { makeTempDir } from '../support/tempDir.js';
import { startTestSimulator } from '../support/testSimulator.js';
import { receiver, SECRET } from '../support/webhookHarness.js';

// check finds before run does what run would trip on: a career id the service does not know and
// an unreachable sink, not only an invalid config and a failed ping.
describe('changefeed check', () => {
  it(
    'reads each configured id once, one page of each discovery list, reaches every sink, and ' +
      'says how to fix each problem',
    async () => {
      const simulator = await startTestSimulator({
        seed: 21,
        careers: 2,
        skills: 3,
        eventsPerHour: 0,
        historyHours: 0,
        readsPerHour: 1_000_000,
      });
      const hook = await receiver();
      const refused = await freePort();
      const dir = makeTempDir();
      const config = join(dir, 'changefeed.yaml');
      const known = simulator.careerIds[0] as string;
      writeFileSync(
        config,
        [
          `api: { baseUrl: "${simulator.url}" }`,
          // Reads are paced by the budget on the real clock: at the default 1000/h (900 less the
          // reserve), an hour / 899 apart, about 4 s.
          'budget: { readsPerHour: 3600000 }',
          `watch: { careers: { ids: ["${known}", "career_typo"] }, skills: { discover: true } }`,
          `stateDir: ${join(dir, 'state')}`,
          'sinks:',
          `  - { name: out, type: file, path: ${join(dir, 'deep', 'events.jsonl')} }`,
          `  - { name: hook, type: webhook, url: "${hook.url}", secret: "${SECRET}" }`,
          `  - { name: down, type: webhook, url: "http://127.0.0.1:${refused}/hooks" }`,
          `  - { name: stream, type: redis-streams, url: "redis://127.0.0.1:${refused}", connectTimeoutMs: 2000 }`,
        ].join('\n'),
      );
      const env = { CHANGEFEED_API_KEY: simulator.apiKey };

      const full = await runCli(['check', '--config', config], env);
      expect(full.status, full.stdout + full.stderr).toBe(1);
      const lines = full.stdout.split('\n');
      expect(lines).toContain('ok      ping: the service accepted the key');
      expect(lines).toContain(`ok      career ${known}: its activity log answers`);
      expect(full.stdout).toMatch(/PROBLEM career career_typo: API_NOT_FOUND.*\n\s+fix: .*watch\.careers\.ids/);
      expect(lines).toContain('ok      discovery of skills: GET /api/v1/skills lists 3 skills');
      expect(lines).toContain("reads: 4 requests of the key's 3600000/h bucket");
      expect(full.stdout).toMatch(/ok {6}sink out \(file\): .* is writable/);
      expect(full.stdout).toMatch(/ok {6}sink hook \(webhook\): the endpoint accepts connections/);
      expect(full.stdout).toMatch(/PROBLEM sink down \(webhook\): SINK_ENDPOINT_FAILING: .*ECONNREFUSED/);
      expect(full.stdout).toMatch(/PROBLEM sink stream \(redis-streams\): SINK_UNAVAILABLE/);
      expect(lines).toContain('3 problems found');
      expect(hook.count).toBe(0);

      const noIds = await runCli(['check', '--config', config, '--no-ids', '--probe-sinks'], env);
      expect(noIds.stdout).not.toContain('career_typo');
      expect(noIds.stdout).toContain('skipped: reading the configured ids (--no-ids)');
      expect(noIds.stdout).toContain('reads: 2 requests');
      expect(noIds.stdout).toContain('ok      sink hook (webhook): accepted a signed test event');
      expect(hook.count).toBe(1);
      expect(hook.received[0]?.verified).toBe(true);
      expect(noIds.status).toBe(1); // the unreachable sinks are still problems
    },
    120_000,
  );
});
