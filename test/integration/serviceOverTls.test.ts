import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { ServiceClient } from '../../src/api/serviceClient.js';
import { systemClock } from '../../src/clock.js';
import type { ManualClock } from '../support/manualClock.js';
import { noopLogger } from '../support/noopLogger.js';
import { pingService } from '../../src/daemon/serviceConnection.js';
import { deliveredEvents, expectedEventIds, runOnce, simulatorConfig, testClock } from '../support/daemonHarness.js';
import { skipOrFail } from '../support/requiredBinary.js';
import { makeTempDir } from '../support/tempDir.js';
import { pkiUnavailable, testPki } from '../support/testPki.js';
import { startTestSimulator } from '../support/testSimulator.js';
import { startTlsTerminator } from '../support/tlsServers.js';
import { rejection } from '../support/rejection.js';

/** The simulator behind https with a certificate from a private CA (a TLS-terminating proxy in front of it). */
async function httpsSimulator(clock?: ManualClock) {
  const simulator = await startTestSimulator({
    ...(clock ? { clock } : {}),
    seed: 61,
    careers: 2,
    skills: 1,
    eventsPerHour: 3_600,
    historyHours: 1,
    readsPerHour: 10_000_000,
  });
  const proxy = await startTlsTerminator(testPki(), Number(new URL(simulator.url).port), { clientCert: false });
  return { simulator, baseUrl: `https://127.0.0.1:${proxy.port}` };
}

const ping = (baseUrl: string, caFile?: string): Promise<void> =>
  pingService(
    new ServiceClient({
      baseUrl,
      apiKey: () => 'sim_live_unused',
      credentialSource: 'test',
      userAgent: 'skills-changefeed/test (serviceOverTls)',
      timeoutMs: 5_000,
      maxResponseBytes: 1 << 20,
      clock: systemClock,
      logger: noopLogger,
      gate: { acquire: () => Promise.resolve(), observe: () => undefined },
      ...(caFile ? { ca: readFileSync(caFile, 'utf8') } : {}),
    }),
  );

describe('the service over https with a private CA (api.caFile)', () => {
  let skipReason: string | undefined;
  beforeAll(() => {
    skipReason = skipOrFail('the service over TLS', pkiUnavailable());
  });

  it('polls and delivers everything when api.caFile names the CA', async (ctx) => {
    if (skipReason) return ctx.skip();
    const clock = testClock();
    const { simulator, baseUrl } = await httpsSimulator(clock);
    const stateDir = makeTempDir();
    const config = simulatorConfig({ simulator, stateDir, startFrom: '2000-01-01T00:00:00Z' });
    // Windows end on the service's clock to the second: what existed a second before the run.
    const recent = new Set(expectedEventIds(simulator, clock.now() - 1_000));
    const expected = expectedEventIds(simulator).filter((id) => !recent.has(id));
    const report = await runOnce({ ...config, api: { ...config.api, baseUrl, caFile: testPki().caFile } }, { clock });
    expect(report.ok, JSON.stringify(report.sweep.failures)).toBe(true);
    const delivered = new Set(deliveredEvents(stateDir).map((e) => e.id));
    expect(expected.length).toBeGreaterThan(100);
    expect(expected.filter((id) => !delivered.has(id))).toEqual([]);
  });

  it('refuses the service when the CA is not trusted, naming the problem and the setting', async (ctx) => {
    if (skipReason) return ctx.skip();
    const { baseUrl } = await httpsSimulator();
    for (const caFile of [undefined, testPki().otherCaFile]) {
      const { error } = await rejection(ping(baseUrl, caFile));
      expect(error.message).toMatch(/TLS failed: (self[- ]signed certificate|unable to)/);
      expect(error.message).toContain('api.caFile');
      expect((error as { code?: string }).code).toBe('API_CONNECTION');
    }
  });

  it('refuses a certificate issued for another host name', async (ctx) => {
    if (skipReason) return ctx.skip();
    const { baseUrl } = await httpsSimulator();
    const { error } = await rejection(ping(baseUrl.replace('127.0.0.1', 'localhost'), testPki().caFile));
    expect(error.message).toMatch(/TLS failed: Hostname\/IP does not match certificate's altnames/);
  });
});
