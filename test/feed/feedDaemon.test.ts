import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { checkFeed } from '../../src/cli/feedCheck.js';
import { appConfigSchema } from '../../src/config/appConfigSchema.js';
import { ConfigError } from '../../src/errors.js';
import { scrubSecrets } from '../../src/secrets/secretRegistry.js';
import { createDaemon } from '../support/daemonHarness.js';
import { freePort } from '../support/daemonProcess.js';
import { makeTempDir } from '../support/tempDir.js';
import { OTHER_TOKEN, TOKEN } from './feedHarness.js';

function config(stateDir: string, overrides: Record<string, unknown>) {
  return appConfigSchema.parse({
    api: { baseUrl: 'http://127.0.0.1:1', apiKey: 'k_test_0123456789abcdef0123456789abcdef' },
    sinks: [{ name: 'file', type: 'file', path: join(stateDir, 'events.jsonl') }],
    stateDir,
    ...overrides,
  });
}

describe('the feed in the daemon', () => {
  it('refuses feed.enabled without feed.port or without a token, saying what to set', async () => {
    const stateDir = makeTempDir();
    const noPort = () =>
      createDaemon(config(stateDir, { http: { port: 0 }, feed: { enabled: true, tokens: [TOKEN] } }));
    expect(noPort).toThrow(ConfigError);
    expect(noPort).toThrow(/set feed.port/);
    const samePort = () =>
      createDaemon(config(stateDir, { http: { port: 9464 }, feed: { enabled: true, port: 9464, tokens: [TOKEN] } }));
    expect(samePort).toThrow(/give the feed a port of its own/);
    const noToken = () => createDaemon(config(stateDir, { feed: { enabled: true, port: 0 } }));
    expect(noToken).toThrow(/at least one bearer token in feed.tokens or feed.tokenFiles/);
    expect(() => config(stateDir, { feed: { enabled: true, tokens: ['has a space in it, sixteen+'] } })).toThrow(
      /printable ASCII without spaces/,
    );
    const file = join(stateDir, 'token');
    writeFileSync(file, 'short\n');
    const badFile = () => createDaemon(config(stateDir, { feed: { enabled: true, port: 0, tokenFiles: [file] } }));
    expect(badFile).toThrow(`the token in ${file} cannot be sent in a header`);
    // The state directory lock was released: a daemon can start there now.
    await createDaemon(config(stateDir, {})).stop();
  });

  it('serves the feed on its own listener, apart from health and metrics, with tokens scrubbed from logs', async () => {
    const stateDir = makeTempDir();
    const port = await freePort();
    const feedPort = await freePort();
    const daemon = createDaemon(
      config(stateDir, { http: { port }, feed: { enabled: true, port: feedPort, tokens: [TOKEN] } }),
    );
    try {
      await daemon.start();
      const res = await request(`http://127.0.0.1:${feedPort}/v1/events`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(res.statusCode).toBe(200);
      expect(await res.body.json()).toEqual([]);
      const health = await request(`http://127.0.0.1:${port}/healthz`);
      expect(health.statusCode).toBe(200);
      await health.body.dump();
      // Neither listener serves the other's paths: the probes and tenant names stay on http.port.
      const onHealth = await request(`http://127.0.0.1:${port}/v1/events`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(onHealth.statusCode).toBe(404);
      await onHealth.body.dump();
      for (const path of ['/metrics', '/readyz', '/healthz']) {
        const onFeed = await request(`http://127.0.0.1:${feedPort}${path}`, {
          headers: { authorization: `Bearer ${TOKEN}` },
        });
        expect(onFeed.statusCode).toBe(404);
        await onFeed.body.dump();
      }
      expect(scrubSecrets(`token ${TOKEN}`)).toBe('token [redacted]');
    } finally {
      await daemon.stop();
    }
  });

  it('changefeed check reports the feed: off, missing port, missing token file, or where it is served', () => {
    const stateDir = makeTempDir();
    expect(checkFeed(config(stateDir, {}))).toBeUndefined();
    expect(
      checkFeed(config(stateDir, { http: { port: 9464 }, feed: { enabled: true, tokens: [TOKEN] } })),
    ).toMatchObject({
      ok: false,
      fix: 'set feed.port (or CHANGEFEED_FEED_PORT), a port other than http.port',
    });
    const missing = checkFeed(
      config(stateDir, { feed: { enabled: true, port: 9465, tokenFiles: [join(stateDir, 'nope')] } }),
    );
    expect(missing).toMatchObject({ ok: false });
    expect(missing?.detail).toContain('it does not exist');
    expect(checkFeed(config(stateDir, { feed: { enabled: true, port: 9465, tokens: [TOKEN] } }))).toEqual({
      name: 'feed',
      ok: true,
      detail: '/v1/events and /v1/events/stream on 127.0.0.1:9465, 1 token',
    });
    // check --tenant prints the path that tenant's feed is read on.
    const ofAcme = config(stateDir, {
      feed: { enabled: true, port: 9465, tokens: [TOKEN], allTenantsTokens: [OTHER_TOKEN] },
    });
    expect(checkFeed(ofAcme, 'acme')).toMatchObject({
      ok: true,
      detail:
        '/v1/tenants/acme/events and /v1/tenants/acme/events/stream on 127.0.0.1:9465, 1 token (and 1 of every tenant)',
    });
  });
});
