import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/observe/createLogger.js';
import { startTestSimulator } from '../support/testSimulator.js';
import { runOnce, simulatorConfig, testClock } from '../support/daemonHarness.js';
import { makeTempDir } from '../support/tempDir.js';

function capturedLogger(): { logger: ReturnType<typeof createLogger>; text: () => string } {
  const stream = new PassThrough();
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  return {
    logger: createLogger({ level: 'trace', destination: stream }),
    text: () => Buffer.concat(chunks).toString('utf8'),
  };
}

describe('secrets in logs', () => {
  it('never logs the API key, whether the service accepts it or rejects it', async () => {
    const clock = testClock();
    const simulator = await startTestSimulator({
      clock,
      seed: 2,
      careers: 2,
      skills: 1,
      eventsPerHour: 600,
      historyHours: 1,
      readsPerHour: 1_000_000,
    });
    const accepted = capturedLogger();
    const stateDir = makeTempDir();
    const good = simulatorConfig({ simulator, stateDir, startFrom: '2000-01-01T00:00:00Z' });
    expect((await runOnce(good, { clock, logger: accepted.logger })).ok).toBe(true);
    expect(accepted.text()).toContain('service request');
    expect(accepted.text()).not.toContain(simulator.apiKey);

    const wrongKey = `sim_live_${'Z'.repeat(32)}`;
    const rejected = capturedLogger();
    const bad = { ...good, api: { ...good.api, apiKey: wrongKey } };
    const report = await runOnce(bad, { clock, logger: rejected.logger });
    expect(report.ok).toBe(false);
    const text = rejected.text();
    expect(text).toContain('credential rejected by the service (401)');
    expect(text).toContain('api.apiKey in the config');
    expect(text).not.toContain(wrongKey);
    expect(text).not.toMatch(/Bearer\s+\S{8,}/i);
  });
});
