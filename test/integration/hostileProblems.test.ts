import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { storePath } from '../../src/store/sqlite/database.js';
import { runOnce, simulatorConfig, testClock } from '../support/daemonHarness.js';
import { startRewritingProxy, type ProxiedAnswer } from '../support/rewritingProxy.js';
import { runCliInProcess as runCli } from '../support/runCli.js';
import { openSqliteStoreFile } from '../support/sqliteStoreFile.js';
import { makeTempDir } from '../support/tempDir.js';
import { startTestSimulator } from '../support/testSimulator.js';

/** What a terminal takes for a command: clear the screen, then a line of the attacker's. */
const ESCAPES = '\u001b[2J\u001b[H\rall logs healthy\n';

/** Every career activity read answered 500 with `problem` as its problem document. */
function failingCareerReads(problem: Record<string, unknown>) {
  return (answer: ProxiedAnswer): ProxiedAnswer => {
    if (!/\/careers\/[^/]+\/activity/.test(answer.path)) return answer;
    return {
      ...answer,
      status: 500,
      headers: { ...answer.headers, 'content-type': 'application/problem+json' },
      body: JSON.stringify({
        type: 'https://errors.example/internal-error',
        title: 'Internal error',
        status: 500,
        instance: answer.path,
        requestId: 'req-1',
        ...problem,
      }),
    };
  };
}

describe('a problem document the service answers a read with', () => {
  it("reaches the log's last error and `status` cut to a few hundred characters", async () => {
    const clock = testClock();
    const simulator = await startTestSimulator({
      clock,
      seed: 53,
      careers: 1,
      skills: 0,
      identityProviderShare: 0,
      eventsPerHour: 0,
      historyHours: 0,
      readsPerHour: 1_000_000,
    });
    const careerId = simulator.careerIds[0] as string;
    const baseUrl = await startRewritingProxy(simulator.url, failingCareerReads({ detail: 'x'.repeat(60_000) }));
    const stateDir = makeTempDir();
    const config = simulatorConfig({
      simulator,
      stateDir,
      overrides: {
        watch: { identityProviderEvents: false, careers: { ids: [careerId] }, skills: { discover: false } },
      },
    });
    const report = await runOnce({ ...config, api: { ...config.api, baseUrl } }, { clock });
    expect(report.ok).toBe(false);

    const store = openSqliteStoreFile(storePath(stateDir));
    let lastError: string | null | undefined;
    try {
      lastError = (await store.watchedLogs.list()).find((w) => w.objectId === careerId)?.lastError;
    } finally {
      await store.close();
    }
    expect(lastError).toContain('API_SERVER_ERROR: the service failed with 500: ');
    expect(lastError!.length).toBeLessThan(2_000);

    const configFile = join(stateDir, 'inspect.yaml');
    writeFileSync(configFile, `stateDir: ${stateDir}\nsinks: [{ name: file, type: stdout }]\n`);
    const status = await runCli(['status', '--config', configFile]);
    expect(status.status, status.stderr).toBe(0);
    expect(status.stdout.length).toBeLessThan(10_000);
  }, 60_000);

  it('is shown by `status` with its control characters escaped, as is a listed id, there and in `plan`', async () => {
    const clock = testClock();
    const simulator = await startTestSimulator({
      clock,
      seed: 54,
      careers: 1,
      skills: 0,
      identityProviderShare: 0,
      eventsPerHour: 0,
      historyHours: 0,
      readsPerHour: 1_000_000,
    });
    const failing = failingCareerReads({ detail: ESCAPES });
    const listedId = `career${ESCAPES}`;
    const baseUrl = await startRewritingProxy(simulator.url, (answer) => {
      if (!answer.path.startsWith('/api/v1/careers?')) return failing(answer);
      const body = JSON.parse(answer.body) as { data: unknown[] };
      return { ...answer, body: JSON.stringify({ ...body, data: [...body.data, { id: listedId }] }) };
    });
    const stateDir = makeTempDir();
    const config = simulatorConfig({
      simulator,
      stateDir,
      overrides: { watch: { identityProviderEvents: false, careers: { discover: true }, skills: { discover: false } } },
    });
    expect((await runOnce({ ...config, api: { ...config.api, baseUrl } }, { clock })).ok).toBe(false);

    const configFile = join(stateDir, 'inspect.yaml');
    writeFileSync(configFile, `stateDir: ${stateDir}\nsinks: [{ name: file, type: stdout }]\n`);
    const status = await runCli(['status', '--config', configFile]);
    expect(status.status, status.stderr).toBe(0);
    const escaped = '\\u001b[2J\\u001b[H\\u000dall logs healthy\\u000a';
    expect(status.stdout).toContain(`career${escaped}`);
    expect(status.stdout).toContain(`the service failed with 500: ${escaped}`);
    expect(status.stdout).not.toContain('\u001b');
    expect(status.stdout).not.toContain('\r');
    const plan = await runCli(['plan', '--config', configFile]);
    expect(plan.status, plan.stderr).toBe(0);
    expect(plan.stdout).toContain(`career:career${escaped}`);
    expect(plan.stdout).not.toContain('\u001b');
  }, 60_000);
});
