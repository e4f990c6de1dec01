import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterEach, describe, expect, it } from 'vitest';
import { ALL_SCOPES, type Simulator } from '../../src/simulator/index.js';
import { startTestSimulator } from '../support/testSimulator.js';
import { freePort, startDaemonProcess, until, type DaemonProcess } from '../support/daemonProcess.js';
import { deliveredEvents, deliveredSoFar } from '../support/daemonHarness.js';
import { makeTempDir } from '../support/tempDir.js';
import { receiver, SECRET } from '../support/webhookHarness.js';

/**
 * How long a wait for the daemon may take before it counts as a hang. Only a limit for failing:
 * on two cores shared with CPU-burning processes a key rotation took over 10 s to show in /readyz.
 */
const LIVENESS_MS = 60_000;

let daemon: DaemonProcess | undefined;
afterEach(async () => {
  if (daemon && daemon.child.exitCode === null) {
    daemon.child.kill('SIGKILL');
    await daemon.exited();
  }
  daemon = undefined;
});

function writeConfig(file: string, lines: string[]): void {
  writeFileSync(file, lines.join('\n'));
}

function baseConfig(dir: string, sim: Simulator, httpPort: number, sinks: string[]): string[] {
  return [
    'api:',
    `  baseUrl: ${sim.url}`,
    `  apiKeyFile: ${join(dir, 'api-key')}`,
    // First polls at once: the default spreads a start-up's first polls over a minute.
    'watch: { careers: { discover: true }, skills: { discover: true }, pollIntervalSeconds: ' +
      '0.3, startFrom: "2000-01-01T00:00:00Z", schedule: { firstPollWithinSeconds: 0 } }',
    'budget: { readsPerHour: 3600000, reserve: 0 }',
    `stateDir: ${join(dir, 'state')}`,
    `http: { port: ${httpPort} }`,
    'sinks:',
    ...sinks,
  ];
}

/** Writes the key the way a Kubernetes secret update does: a new file renamed over the old one. */
function rotateKey(dir: string, key: string): void {
  writeFileSync(join(dir, 'api-key.tmp'), `${key}\n`);
  renameSync(join(dir, 'api-key.tmp'), join(dir, 'api-key'));
}

const readyz = async (
  port: number,
): Promise<{ status: number; body: { ready: boolean; checks: { name: string; ok: boolean; detail?: string }[] } }> => {
  const res = await fetch(`http://127.0.0.1:${port}/readyz`);
  return { status: res.status, body: (await res.json()) as never };
};

const metricValue = (text: string, name: string, labels: Record<string, string> = {}): number => {
  const family = parsePrometheusTextFormat(text).find((f) => f.name === name);
  if (!family) return 0;
  return family.metrics
    .filter((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))
    .reduce((sum, m) => sum + Number(m.value ?? 0), 0);
};

/** Observations in a histogram family: its +Inf bucket (the parser keeps no labels on histograms). */
const histogramCount = (text: string, name: string): number => {
  const family = parsePrometheusTextFormat(text).find((f) => f.name === name);
  return (family?.metrics ?? []).reduce((sum, m) => sum + Number(m.buckets?.['+Inf'] ?? 0), 0);
};

/** A daemon with one file sink (events.jsonl) as a child process, once its readiness answers 200. */
async function startReadyDaemon(simulator: Simulator): Promise<{ dir: string; port: number; proc: DaemonProcess }> {
  const dir = makeTempDir();
  const port = await freePort();
  const config = join(dir, 'changefeed.yaml');
  rotateKey(dir, simulator.apiKey);
  writeConfig(
    config,
    baseConfig(dir, simulator, port, [`  - { name: out, type: file, path: ${join(dir, 'events.jsonl')} }`]),
  );
  const proc = startDaemonProcess(['--config', config]);
  daemon = proc;
  await until(
    async () => (await readyz(port).catch(() => ({ status: 0 }))).status === 200,
    LIVENESS_MS,
    'readiness 200',
  );
  return { dir, port, proc };
}

describe('running as a sidecar', { timeout: 240_000 }, () => {
  it('readiness fails when the key is revoked and recovers when a new key is written to the key file', async () => {
    const simulator = await startTestSimulator({
      seed: 51,
      careers: 2,
      skills: 1,
      eventsPerHour: 3_600,
      historyHours: 0,
      readsPerHour: 10_000_000,
    });
    const { dir, port, proc } = await startReadyDaemon(simulator);
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);

    const newKey = `sim_live_${'R'.repeat(32)}`;
    simulator.addApiKey(newKey, [...ALL_SCOPES]);
    simulator.revokeApiKey(simulator.apiKey);
    await until(async () => (await readyz(port)).status === 503, LIVENESS_MS, 'readiness 503 after revocation');
    const failing = await readyz(port);
    expect(failing.body.checks.find((c) => c.name === 'credential')).toMatchObject({ ok: false });
    expect(failing.body.checks.find((c) => c.name === 'credential')?.detail).toContain('api.apiKeyFile');

    rotateKey(dir, newKey);
    await until(
      async () => (await readyz(port)).status === 200,
      LIVENESS_MS,
      'readiness 200 after the key file changed',
    );
    expect(proc.logs()).not.toContain(newKey);
    proc.child.kill('SIGTERM');
    expect(await proc.exited()).toBe(0);
  });

  it('exposes Prometheus metrics whose counters move as events flow', async () => {
    const simulator = await startTestSimulator({
      seed: 52,
      careers: 2,
      skills: 1,
      eventsPerHour: 0,
      historyHours: 0,
      readsPerHour: 10_000_000,
    });
    const { dir, port, proc } = await startReadyDaemon(simulator);
    const scrape = async (): Promise<string> => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const before = await scrape();
    expect(parsePrometheusTextFormat(before).map((f) => f.name)).toEqual(
      expect.arrayContaining([
        'changefeed_polls_total',
        'changefeed_api_requests_total',
        'changefeed_budget_allowance_per_hour',
        'changefeed_schedule_alpha',
        'changefeed_schedule_poll_budget_per_hour',
        'changefeed_schedule_follow_ups_last_hour',
        'changefeed_outbox_pending',
        'changefeed_watermark_age_seconds',
        'changefeed_coverage_gaps',
      ]),
    );
    simulator.appendBurst('career', simulator.careerIds[0] as string, 25, {
      from: Date.now() - 60_000,
      to: Date.now() - 1_000,
    });
    await until(() => deliveredSoFar(dir).length === 25, LIVENESS_MS, '25 events in the file');
    // The counters move right after the sink acknowledged the batch, so wait for them, not the file.
    let after = '';
    await until(
      async () =>
        metricValue((after = await scrape()), 'changefeed_deliveries_total', { sink: 'out', outcome: 'delivered' }) ===
        25,
      LIVENESS_MS,
      'the delivered counter at 25',
    );
    expect(
      metricValue(after, 'changefeed_entries_ingested_total', { log: 'career' }) -
        metricValue(before, 'changefeed_entries_ingested_total', { log: 'career' }),
    ).toBe(25);
    expect(metricValue(after, 'changefeed_deliveries_total', { sink: 'out', outcome: 'delivered' })).toBe(25);
    expect(histogramCount(after, 'changefeed_detection_delay_seconds')).toBe(25);
    expect(histogramCount(after, 'changefeed_delivery_latency_seconds')).toBe(25);
    // The scheduler's choices: an exponent up to 0.5 and a positive share of the budget for polls.
    expect(metricValue(after, 'changefeed_schedule_alpha')).toBeGreaterThanOrEqual(0);
    expect(metricValue(after, 'changefeed_schedule_alpha')).toBeLessThanOrEqual(0.5);
    expect(metricValue(after, 'changefeed_schedule_poll_budget_per_hour')).toBeGreaterThan(0);
    expect(metricValue(after, 'changefeed_api_requests_total')).toBeGreaterThan(
      metricValue(before, 'changefeed_api_requests_total'),
    );
    expect(metricValue(after, 'changefeed_outbox_pending', { sink: 'out' })).toBe(0);
    proc.child.kill('SIGTERM');
    expect(await proc.exited()).toBe(0);
    // The wait above leaves out a last line not yet ended; read strictly once the writer has gone,
    // so that a line the daemon did tear fails the test.
    expect(deliveredEvents(dir)).toHaveLength(25);
  });

  it('exits 0 on SIGTERM in the middle of deliveries, which finish first; a restart delivers the rest, none twice', async () => {
    const simulator = await startTestSimulator({
      seed: 53,
      careers: 3,
      skills: 0,
      identityProviderShare: 0,
      eventsPerHour: 0,
      historyHours: 0,
      readsPerHour: 10_000_000,
    });
    for (const id of simulator.careerIds)
      simulator.appendBurst('career', id, 10, { from: Date.now() - 60_000, to: Date.now() - 1_000 });
    const slow = await receiver({ respond: () => ({ status: 204, delayMs: 3_000 }) });
    const dir = makeTempDir();
    const port = await freePort();
    const config = join(dir, 'changefeed.yaml');
    rotateKey(dir, simulator.apiKey);
    const hookSink = (url: string) =>
      `  - { name: hook, type: webhook, url: ${url}, secret: ${SECRET}, timeoutMs: 10000 }`;
    writeConfig(config, baseConfig(dir, simulator, port, [hookSink(slow.url)]));
    // Exit 0 means stopped before the shutdown timeout (which exits 1): that is the check, so the
    // timeout leaves a slow machine room rather than being raced by a wall-clock limit here.
    daemon = startDaemonProcess(['--config', config, '--shutdown-timeout', '30']);
    await until(() => slow.received.length >= 3, LIVENESS_MS, 'three deliveries in flight');
    daemon.child.kill('SIGTERM');
    expect(await daemon.exited()).toBe(0);

    // The deliveries in flight at SIGTERM were drained (3 s each, well within half the shutdown
    // timeout) and acknowledged: the restart sends only the others, and none of them again.
    const drained = new Set(slow.received.map((r) => r.id));
    expect(drained.size).toBeGreaterThanOrEqual(3);
    const fast = await receiver();
    writeConfig(config, baseConfig(dir, simulator, port, [hookSink(fast.url)]));
    daemon = startDaemonProcess(['--config', config]);
    await until(
      () => new Set([...drained, ...fast.received.map((r) => r.id)]).size === 30,
      LIVENESS_MS,
      'all 30 events delivered across both endpoints',
    );
    expect(fast.received.filter((r) => drained.has(r.id))).toEqual([]);
    daemon.child.kill('SIGTERM');
    expect(await daemon.exited()).toBe(0);
  });

  it('keeps running on the old config when SIGHUP brings a broken one, and applies a valid one', async () => {
    const simulator = await startTestSimulator({
      seed: 54,
      careers: 2,
      skills: 0,
      identityProviderShare: 0,
      eventsPerHour: 0,
      historyHours: 0,
      readsPerHour: 10_000_000,
    });
    const dir = makeTempDir();
    const port = await freePort();
    const config = join(dir, 'changefeed.yaml');
    rotateKey(dir, simulator.apiKey);
    const fileSink = (name: string) => `  - { name: ${name}, type: file, path: ${join(dir, `${name}.jsonl`)} }`;
    writeConfig(config, baseConfig(dir, simulator, port, [fileSink('first')]));
    daemon = startDaemonProcess(['--config', config]);
    await until(
      async () => (await readyz(port).catch(() => ({ status: 0 }))).status === 200,
      LIVENESS_MS,
      'readiness 200',
    );

    writeConfig(config, [...baseConfig(dir, simulator, port, [fileSink('first')]), 'watch: { overlapSecond: 3 }']);
    daemon.child.kill('SIGHUP');
    await daemon.waitForLog('SIGHUP: the new configuration is invalid; still running on the previous one');
    simulator.appendBurst('career', simulator.careerIds[0] as string, 5, {
      from: Date.now() - 60_000,
      to: Date.now() - 1_000,
    });
    await until(() => deliveredSoFar(dir, 'first.jsonl').length === 5, LIVENESS_MS, 'delivery on the old config');

    writeConfig(config, baseConfig(dir, simulator, port, [fileSink('first'), fileSink('second')]));
    daemon.child.kill('SIGHUP');
    await daemon.waitForLog('SIGHUP: configuration is valid');
    await daemon.waitForLog('new sink starts from now');
    await until(
      async () => (await readyz(port).catch(() => ({ status: 0 }))).status === 200,
      LIVENESS_MS,
      'readiness 200 after reload',
    );
    simulator.appendBurst('career', simulator.careerIds[1] as string, 4, {
      from: Date.now() - 60_000,
      to: Date.now() - 1_000,
    });
    // The two sinks deliver independently: the old one may write its four a moment after the new one.
    await until(
      () => deliveredSoFar(dir, 'second.jsonl').length === 4 && deliveredSoFar(dir, 'first.jsonl').length >= 9,
      LIVENESS_MS,
      'the new sink receiving events, and the old one too',
    );
    expect(deliveredEvents(dir, 'second.jsonl')).toHaveLength(4);
    expect(deliveredEvents(dir, 'first.jsonl')).toHaveLength(9);
    daemon.child.kill('SIGTERM');
    expect(await daemon.exited()).toBe(0);
  });
});
