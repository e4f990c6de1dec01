import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { checkFeed } from '../../src/cli/feedCheck.js';
import { loadMainConfig, tenantAppConfig } from '../../src/config/mainConfig.js';
import { readTenants } from '../../src/config/readTenants.js';
import { ChangefeedDaemon } from '../../src/daemon/changefeedDaemon.js';
import { noopLogger } from '../support/noopLogger.js';
import { freePort, until } from '../support/daemonProcess.js';
import { makeTempDir } from '../support/tempDir.js';
import { writeTenantFile } from '../support/tenantFile.js';

const ACME = 'acme-feed-token-0123456789';
const GLOBEX = 'globex-feed-token-0123456789';
const OPERATOR = 'operator-feed-token-0123456789';

/** A main file with `tenants.dir` and the feed on `feedPort`, tenants acme and globex each with their own token. */
function tenantsWithFeed(mainFeed: string, ports: { http: number; feed: number }) {
  const dir = makeTempDir();
  const tenantsDir = join(dir, 'tenants');
  mkdirSync(tenantsDir);
  const file = join(dir, 'changefeed.yaml');
  writeFileSync(
    file,
    [
      `stateDir: ${join(dir, 'state')}`,
      `tenants: { dir: ${tenantsDir} }`,
      'api: { baseUrl: "http://127.0.0.1:1" }',
      `http: { port: ${ports.http} }`,
      `feed: { enabled: true, port: ${ports.feed}, ${mainFeed} }`,
      '',
    ].join('\n'),
  );
  for (const [name, token] of [
    ['acme', ACME],
    ['globex', GLOBEX],
  ] as const)
    writeTenantFile(tenantsDir, name, {
      apiKey: `k_${name}_0123456789abcdef0123456789abcdef`,
      sinkPath: join(dir, `${name}.jsonl`),
      lines: [`feed: { tokens: ["${token}"] }`],
    });
  return { file, dir };
}

async function status(url: string, token?: string): Promise<number> {
  const res = await request(url, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  await res.body.dump();
  return res.statusCode;
}

describe('feed tokens of the tenant files', () => {
  it("read only their own tenant; the main file's all-tenants token reads every one", async () => {
    const ports = { http: await freePort(), feed: await freePort() };
    const { file } = tenantsWithFeed(`allTenantsTokens: ["${OPERATOR}"]`, ports);
    const main = loadMainConfig({ file, env: {} });
    const daemon = new ChangefeedDaemon(main, { logger: noopLogger });
    const feed = (tenant: string) => `http://127.0.0.1:${ports.feed}/v1/tenants/${tenant}/events`;
    try {
      await daemon.start();
      await until(async () => (await status(feed('acme'), ACME)) === 200, 30_000, 'acme to run');
      await until(async () => (await status(feed('globex'), GLOBEX)) === 200, 30_000, 'globex to run');
      expect(await status(feed('globex'), ACME)).toBe(404);
      expect(await status(feed('acme'), GLOBEX)).toBe(404);
      expect(await status(feed('acme'), OPERATOR)).toBe(200);
      expect(await status(feed('globex'), OPERATOR)).toBe(200);
      expect(await status(feed('acme'))).toBe(401);
      expect(await status(feed('nosuch'))).toBe(401);
      // Tenant names are on the health listener only.
      const ready = await request(`http://127.0.0.1:${ports.http}/readyz`);
      expect(await ready.body.text()).toContain('acme/');
      expect(await status(`http://127.0.0.1:${ports.feed}/readyz`, OPERATOR)).toBe(404);
      expect(await status(`http://127.0.0.1:${ports.feed}/metrics`, OPERATOR)).toBe(404);
    } finally {
      await daemon.stop();
    }
  });

  it("refuses a token in the main file's feed.tokens when tenants.dir is set, saying where it belongs", () => {
    const { file } = tenantsWithFeed(`tokens: ["${OPERATOR}"]`, { http: 0, feed: 0 });
    expect(() => loadMainConfig({ file, env: {} })).toThrow(/put each tenant's tokens in its own file/);
  });

  it('check --tenant prints the path of that tenant and the tokens that read it', () => {
    const { file } = tenantsWithFeed(`allTenantsTokens: ["${OPERATOR}"]`, { http: 9464, feed: 9465 });
    const main = loadMainConfig({ file, env: {} });
    const globex = readTenants(main.tenants).tenants.find((t) => t.name === 'globex')!;
    expect(checkFeed(tenantAppConfig(main.process, globex.config), 'globex')).toEqual({
      name: 'feed',
      ok: true,
      detail:
        '/v1/tenants/globex/events and /v1/tenants/globex/events/stream on 127.0.0.1:9465, 1 token (and 1 of every tenant)',
    });
  });
});
