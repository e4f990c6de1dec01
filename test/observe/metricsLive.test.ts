import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/index.js';
import { deliveredEvents } from '../support/daemonHarness.js';
import { freePort, startDaemonProcess, until, type DaemonProcess } from '../support/daemonProcess.js';
import { checkMetrics, familiesOf, promtool, sampleValue } from '../support/metricsText.js';
import { makeTempDir } from '../support/tempDir.js';
import { startTestSimulator } from '../support/testSimulator.js';
import { receiver, SECRET } from '../support/webhookHarness.js';

/** Only a limit for failing: on two loaded cores a daemon's start can take many seconds. */
const LIVENESS_MS = 60_000;
const FEED_TOKEN = 'feed-token-for-the-metrics-test';
const VERSION = (
  JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'package.json'), 'utf8')) as {
    version: string;
  }
).version;

let daemon: DaemonProcess | undefined;
afterEach(async () => {
  if (daemon && daemon.child.exitCode === null) {
    daemon.child.kill('SIGKILL');
    await daemon.exited();
  }
  daemon = undefined;
});

async function simulatorWithOneCareer(seed: number): Promise<Simulator> {
  return startTestSimulator({
    seed,
    careers: 1,
    skills: 0,
    eventsPerHour: 0,
    historyHours: 0,
    readsPerHour: 10_000_000,
  });
}

function burst(simulator: Simulator, count: number): void {
  simulator.appendBurst('career', simulator.careerIds[0] as string, count, {
    from: Date.now() - 60_000,
    to: Date.now() - 1_000,
  });
}

/** `changefeed run` as a child with the HTTP server and the feed on, delivering to `sink` (a YAML list item). */
async function startDaemon(
  simulator: Simulator,
  sink: (dir: string) => string,
): Promise<{ port: number; feedPort: number; dir: string }> {
  const dir = makeTempDir();
  const port = await freePort();
  const feedPort = await freePort();
  const config = join(dir, 'changefeed.yaml');
  writeFileSync(
    config,
    [
      `api: { baseUrl: "${simulator.url}" }`,
      'watch: { careers: { discover: true }, skills: { discover: true }, pollIntervalSeconds: 0.3, ' +
        'startFrom: "2000-01-01T00:00:00Z", schedule: { firstPollWithinSeconds: 0 } }',
      'budget: { readsPerHour: 3600000, reserve: 0 }',
      `stateDir: ${join(dir, 'state')}`,
      `http: { port: ${port} }`,
      `feed: { enabled: true, port: ${feedPort}, tokens: ["${FEED_TOKEN}"] }`,
      'sinks:',
      sink(dir),
    ].join('\n'),
  );
  daemon = startDaemonProcess(['--config', config], {
    CHANGEFEED_API_KEY: simulator.apiKey,
    CHANGEFEED_LOG_LEVEL: 'info',
  });
  await daemon.waitForLog('changefeed running', LIVENESS_MS);
  return { port, feedPort, dir };
}

const scrapeOf = (port: number) => async (): Promise<string> =>
  (await fetch(`http://127.0.0.1:${port}/metrics`)).text();

/** Scrapes until `condition` holds for an exposition; returns that exposition. */
async function scrapeUntil(scrape: () => Promise<string>, condition: (text: string) => boolean, what: string) {
  let text = '';
  await until(async () => condition((text = await scrape().catch(() => ''))), LIVENESS_MS, what);
  return text;
}

describe('metrics an on-call engineer can alert on', { timeout: 180_000 }, () => {
  it('a receiver down: connected goes 0 and the oldest pending age grows; the exposition passes promtool', async () => {
    const binary = promtool('promtool check metrics on a live daemon');
    const simulator = await simulatorWithOneCareer(71);
    const hook = await receiver();
    burst(simulator, 5);
    const { port, feedPort } = await startDaemon(
      simulator,
      () => `  - { name: hook, type: webhook, url: "${hook.url}", secret: "${SECRET}" }`,
    );
    const scrape = scrapeOf(port);
    const hookLabels = { tenant: 'default', sink: 'hook' };
    let text = await scrapeUntil(
      scrape,
      (t) => sampleValue(t, 'changefeed_deliveries_total', { ...hookLabels, outcome: 'delivered' }) === 5,
      '5 events delivered',
    );
    expect(sampleValue(text, 'changefeed_sink_connected', hookLabels)).toBe(1);
    expect(sampleValue(text, 'changefeed_sink_disabled', hookLabels)).toBe(0);
    expect(sampleValue(text, 'changefeed_sink_circuit_state', { ...hookLabels, state: 'closed' })).toBe(1);
    expect(sampleValue(text, 'changefeed_sink_circuit_state', { ...hookLabels, state: 'open' })).toBe(0);
    expect(sampleValue(text, 'changefeed_sink_oldest_pending_age_seconds', hookLabels)).toBe(0);
    expect(sampleValue(text, 'changefeed_build_info', { version: VERSION })).toBe(1);
    // Node's and the process's metrics under their standard names, and only there.
    expect(familiesOf(text)).toEqual(
      expect.arrayContaining(['process_cpu_seconds_total', 'nodejs_heap_size_used_bytes']),
    );
    expect(familiesOf(text).filter((name) => name.startsWith('changefeed_process_'))).toEqual([]);

    // The feed: a page, then a stream held open and closed.
    const auth = { authorization: `Bearer ${FEED_TOKEN}` };
    const page = await fetch(`http://127.0.0.1:${feedPort}/v1/events?limit=100`, { headers: auth });
    expect(page.status).toBe(200);
    expect((await page.json()) as unknown[]).toHaveLength(5);
    // A refusal the tenant's feed answers is counted (one the token check answers names no tenant).
    expect((await fetch(`http://127.0.0.1:${feedPort}/v1/events?limit=x`, { headers: auth })).status).toBe(400);
    const streamAbort = new AbortController();
    const stream = await fetch(`http://127.0.0.1:${feedPort}/v1/events/stream`, {
      headers: auth,
      signal: streamAbort.signal,
    });
    const reader = stream.body!.getReader();
    let received = '';
    while ((received.match(/^data: /gm) ?? []).length < 5)
      received += Buffer.from((await reader.read()).value).toString();
    const feed = { tenant: 'default' };
    text = await scrape();
    expect(sampleValue(text, 'changefeed_feed_open_streams', feed)).toBe(1);
    expect(sampleValue(text, 'changefeed_feed_events_served_total', { ...feed, mode: 'page' })).toBe(5);
    expect(sampleValue(text, 'changefeed_feed_events_served_total', { ...feed, mode: 'stream' })).toBe(5);
    expect(sampleValue(text, 'changefeed_feed_requests_total', { ...feed, mode: 'page', status_class: '2xx' })).toBe(1);
    expect(sampleValue(text, 'changefeed_feed_requests_total', { ...feed, mode: 'page', status_class: '4xx' })).toBe(1);
    streamAbort.abort();
    text = await scrapeUntil(
      scrape,
      (t) => sampleValue(t, 'changefeed_feed_open_streams', feed) === 0,
      'the stream counted closed',
    );
    expect(sampleValue(text, 'changefeed_feed_requests_total', { ...feed, mode: 'stream' })).toBe(1);

    if (binary) expect(checkMetrics(binary, text)).toEqual({ status: 0, output: '' });

    // The receiver goes away: events wait, and the gauges say so however few retries are counted.
    await hook.close();
    burst(simulator, 3);
    text = await scrapeUntil(
      scrape,
      (t) =>
        sampleValue(t, 'changefeed_sink_connected', hookLabels) === 0 &&
        (sampleValue(t, 'changefeed_sink_oldest_pending_age_seconds', hookLabels) ?? 0) > 0,
      'the sink disconnected with events waiting',
    );
    const age = sampleValue(text, 'changefeed_sink_oldest_pending_age_seconds', hookLabels) ?? 0;
    expect(sampleValue(text, 'changefeed_outbox_pending', hookLabels)).toBe(3);
    await scrapeUntil(
      scrape,
      (t) => (sampleValue(t, 'changefeed_sink_oldest_pending_age_seconds', hookLabels) ?? 0) >= age + 1,
      'the oldest pending age to grow by a second',
    );
    if (binary) expect(checkMetrics(binary, await scrape())).toEqual({ status: 0, output: '' });
    daemon!.child.kill('SIGTERM');
    expect(await daemon!.exited()).toBe(0);
  });

  it('counters go on across a SIGHUP reload: no new registry, no reset', async () => {
    const simulator = await simulatorWithOneCareer(72);
    burst(simulator, 4);
    const { port, dir } = await startDaemon(
      simulator,
      (d) => `  - { name: out, type: file, path: ${join(d, 'events.jsonl')} }`,
    );
    const scrape = scrapeOf(port);
    const delivered = { tenant: 'default', sink: 'out', outcome: 'delivered' };
    const before = await scrapeUntil(
      scrape,
      (t) => sampleValue(t, 'changefeed_deliveries_total', delivered) === 4,
      '4 events delivered',
    );
    const requestsBefore = sampleValue(before, 'changefeed_api_requests_total') ?? 0;
    expect(requestsBefore).toBeGreaterThan(0);

    daemon!.child.kill('SIGHUP');
    await daemon!.waitForLog('SIGHUP: configuration is valid', LIVENESS_MS);
    await until(() => daemon!.logs().split('changefeed running').length === 3, LIVENESS_MS, 'the daemon running again');
    burst(simulator, 2);
    const after = await scrapeUntil(
      scrape,
      (t) => sampleValue(t, 'changefeed_deliveries_total', delivered) !== undefined,
      'the metrics served again',
    );
    expect(deliveredEvents(dir).length).toBeGreaterThanOrEqual(4);
    // 4 before the reload and counting on: a reset would read 0 or 2.
    expect(sampleValue(after, 'changefeed_deliveries_total', delivered)).toBeGreaterThanOrEqual(4);
    await scrapeUntil(
      scrape,
      (t) => sampleValue(t, 'changefeed_deliveries_total', delivered) === 6,
      'the 2 new events counted on top of the 4',
    );
    expect(sampleValue(await scrape(), 'changefeed_api_requests_total')).toBeGreaterThan(requestsBefore);
    daemon!.child.kill('SIGTERM');
    expect(await daemon!.exited()).toBe(0);
  });
});
