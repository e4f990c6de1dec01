import { existsSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { createDaemon, simulatorConfig } from '../support/daemonHarness.js';
import { runCliInProcess as runCli } from '../support/runCli.js';
import { makeTempDir } from '../support/tempDir.js';
import { startTestSimulator } from '../support/testSimulator.js';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

// A config the schema accepts but a tenant cannot be built from: the webhook sink's CA file is
// missing, which only making the sink finds. `run` must refuse it before it serves or polls.
describe('run with a tenant config that cannot work', () => {
  it('exits 2 naming the file before anything starts: no port taken, no request sent', async () => {
    const simulator = await startTestSimulator({ seed: 5, careers: 1, skills: 1, eventsPerHour: 0, historyHours: 0 });
    // Taken by someone else: a daemon that served health before checking would fail on the port instead.
    const busy = createServer();
    servers.push(busy);
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const port = (busy.address() as { port: number }).port;
    const dir = makeTempDir();
    const missing = join(dir, 'absent-ca.pem');
    const file = join(dir, 'changefeed.yaml');
    writeFileSync(
      file,
      [
        `api: { baseUrl: "${simulator.url}" }`,
        `http: { port: ${port} }`,
        `stateDir: ${join(dir, 'state')}`,
        `sinks: [{ name: hook, type: webhook, url: "https://127.0.0.1:9/hook", caFile: ${missing} }]`,
      ].join('\n'),
    );
    const result = await runCli(['run', '--config', file], { CHANGEFEED_API_KEY: simulator.apiKey });
    expect(result.status, result.stderr).toBe(2);
    expect(result.stderr).toContain('invalid configuration');
    expect(result.stderr).toContain(`sinks "hook": caFile ${missing} cannot be read (ENOENT)`);
    expect(result.stderr).not.toContain('already in use');
    expect(simulator.requests).toEqual([]);
  }, 60_000);

  it('start() rejects with the ConfigError and lets go of the state directory', async () => {
    const simulator = await startTestSimulator({ seed: 5, careers: 1, skills: 1, eventsPerHour: 0, historyHours: 0 });
    const stateDir = makeTempDir();
    const missing = join(stateDir, 'absent-ca.pem');
    const config = simulatorConfig({
      simulator,
      stateDir,
      overrides: { sinks: [{ name: 'hook', type: 'webhook', url: 'https://127.0.0.1:9/hook', caFile: missing }] },
    });
    await expect(createDaemon(config).start()).rejects.toThrow(ConfigError);
    // The lock is released: a daemon with a config that works starts on the same directory.
    const fixed = simulatorConfig({ simulator, stateDir });
    const daemon = createDaemon({ ...fixed, http: { ...fixed.http, port: null } });
    await daemon.start();
    await daemon.stop();
    expect(existsSync(join(stateDir, 'changefeed.sqlite'))).toBe(true);
  }, 60_000);
});
