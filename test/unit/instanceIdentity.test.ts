import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { serviceUserAgent } from '../../src/api/userAgent.js';
import { defaultInstanceId, INSTANCE_ID_MAX_LENGTH } from '../../src/cluster/clusterConfig.js';
import { appConfigSchema, ENV_MAPPING } from '../../src/config/appConfigSchema.js';
import { loadConfig } from '../../src/config/loadConfig.js';
import { systemClock } from '../../src/clock.js';
import { createServiceClient } from '../../src/daemon/serviceConnection.js';
import { ConfigError } from '../../src/errors.js';
import { noopLogger } from '../support/noopLogger.js';
import { ReadBudget } from '../../src/poll/readBudget.js';
import { ServerClock } from '../../src/poll/serverClock.js';
import { createApiKeyProvider } from '../../src/api/apiKeyProvider.js';
import { LoopbackService, RecordingGate, TEST_USER_AGENT, clientFor } from './loopbackService.js';

const VERSION = (
  JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as { version: string }
).version;
const BASE = {
  api: { baseUrl: 'https://skills.example', apiKey: 'sim_live_0123456789abcdef0123456789abcdef' },
  sinks: [{ name: 'out', type: 'stdout' }],
};

function load(env: Record<string, string>, cluster?: unknown) {
  return loadConfig(appConfigSchema, {
    env,
    envMapping: { ...ENV_MAPPING },
    embeddedDefaults: cluster === undefined ? BASE : { ...BASE, cluster },
  });
}

function configErrorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('cluster.instanceId', () => {
  it('defaults to <hostname>-<pid> of this process', () => {
    const id = load({}).cluster.instanceId;
    expect(id).toBe(defaultInstanceId());
    expect(id.endsWith(`-${process.pid}`)).toBe(true);
  });

  it('is set by CHANGEFEED_INSTANCE_ID over the file, which wins over the default', () => {
    expect(ENV_MAPPING.CHANGEFEED_INSTANCE_ID).toBe('cluster.instanceId');
    expect(load({}, { instanceId: 'from-file' }).cluster.instanceId).toBe('from-file');
    expect(load({ CHANGEFEED_INSTANCE_ID: 'pod-7' }, { instanceId: 'from-file' }).cluster.instanceId).toBe('pod-7');
    // A number-looking id stays a string.
    expect(load({ CHANGEFEED_INSTANCE_ID: '42' }).cluster.instanceId).toBe('42');
  });

  it.each([
    ['a line break (header injection)', 'pod-1\r\nX-Evil: 1'],
    ['a control character', 'pod\u0000one'],
    ['a space', 'pod one'],
    ['a parenthesis that would end the User-Agent comment', 'pod)'],
    ['more than the maximum length', 'p'.repeat(INSTANCE_ID_MAX_LENGTH + 1)],
  ])('rejects %s with an error naming cluster.instanceId', (_, instanceId) => {
    const error = configErrorOf(() => load({ CHANGEFEED_INSTANCE_ID: instanceId }));
    expect(error.message).toContain('cluster.instanceId');
    // The value is quoted with its escapes, never echoed raw into a terminal or log line.
    expect(error.message).not.toContain('\r');
    expect(error.message).not.toContain('\u0000');
  });

  it('accepts the longest allowed id and the characters of pod, host and cloud instance names', () => {
    const longest = 'p'.repeat(INSTANCE_ID_MAX_LENGTH);
    expect(load({ CHANGEFEED_INSTANCE_ID: longest }).cluster.instanceId).toBe(longest);
    const named = 'changefeed-7d9f8b6c5-x2k4q.eu-west-1:worker@node+2_a';
    expect(load({ CHANGEFEED_INSTANCE_ID: named }).cluster.instanceId).toBe(named);
  });

  it('sanitizes and bounds the default when the hostname holds characters a header must not', () => {
    expect(defaultInstanceId('web 01\r\n(prod)', 4242)).toBe('web-01-prod-4242');
    expect(defaultInstanceId('', 7)).toBe('host-7');
    expect(defaultInstanceId('h'.repeat(500), 123456)).toBe(`${'h'.repeat(INSTANCE_ID_MAX_LENGTH - 7)}-123456`);
    expect(defaultInstanceId('h'.repeat(500), 123456)).toHaveLength(INSTANCE_ID_MAX_LENGTH);
  });
});

describe('the User-Agent of requests to the service', () => {
  it('names the product, the version from package.json and the instance id', () => {
    expect(serviceUserAgent('pod-7')).toBe(`skills-changefeed/${VERSION} (pod-7)`);
  });

  it('is sent by the service client on every request', async () => {
    const service = await LoopbackService.start(() => ({ status: 200, body: { data: [] } }));
    const client = clientFor(service.url, new RecordingGate());
    await client.getJson('/api/v1/ping', {}, 'identity_provider');
    await client.getJson('/api/v1/careers', { limit: 1 }, 'discovery');
    expect(service.requests.map((r) => r.headers['user-agent'])).toEqual([TEST_USER_AGENT, TEST_USER_AGENT]);
  });

  it("is built by the daemon's client factory from cluster.instanceId and package.json's version", async () => {
    const service = await LoopbackService.start(() => ({ status: 200, body: { data: { status: 'ok' } } }));
    const config = loadConfig(appConfigSchema, {
      env: { CHANGEFEED_INSTANCE_ID: 'changefeed-0' },
      envMapping: { ...ENV_MAPPING },
      embeddedDefaults: { ...BASE, api: { ...BASE.api, baseUrl: service.url } },
    });
    const client = createServiceClient(config, {
      apiKey: createApiKeyProvider(config.api, {}),
      clock: systemClock,
      logger: noopLogger,
      budget: new ReadBudget(config.budget, systemClock),
      serverClock: new ServerClock(systemClock, { toleranceMs: 300_000 }),
    });
    try {
      await client.getJson('/api/v1/ping', {}, 'identity_provider');
    } finally {
      await client.close();
    }
    expect(service.requests[0]?.headers['user-agent']).toBe(`skills-changefeed/${VERSION} (changefeed-0)`);
  });
});
