import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import type { LeaseRow } from '../../src/cluster/leaseTable.js';
import { feedConfigSchema } from '../../src/feed/feedConfig.js';
import { holderRedirect } from '../../src/daemon/holderRedirect.js';
import { routeTenantFeeds } from '../../src/daemon/tenantFeeds.js';

const TOKEN = 'holder-routing-token-0123456789';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/**
 * A replica's feed routes with no tenant running here, over a lease table the test controls:
 * the real router and holderRedirect on a loopback server, without PostgreSQL.
 */
async function nonHolder(
  list: () => Promise<LeaseRow[]>,
  defaultPath = false,
): Promise<{ url: string; reads: () => number }> {
  let reads = 0;
  const elsewhere = holderRedirect({
    table: {
      list: () => {
        reads++;
        return list();
      },
    },
    self: { instanceId: 'replica-a', advertiseUrl: 'http://127.0.0.1:1/a' },
    leaseMs: 15_000,
    feed: feedConfigSchema.parse({ enabled: true, tokens: [TOKEN] }),
    defaultPath,
    // Stands still: every read the test counts is one the requests' own number caused.
    clock: new ManualClock(),
  });
  const server = createServer((req, res) => {
    if (!routeTenantFeeds(req, res, () => undefined, elsewhere)) res.writeHead(404).end();
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, reads: () => reads };
}

const lease = (over: Partial<LeaseRow> = {}): LeaseRow => ({
  tenant: 'acme',
  holder: 'replica-b',
  epoch: 3,
  expiresInMs: 10_000,
  holderLive: true,
  holderUrl: 'http://127.0.0.1:2/b',
  ...over,
});

describe('a replica not running the tenant', () => {
  it('redirects the default tenant of a daemon without tenants.dir on /v1/events, and only then', async () => {
    const rows = () => Promise.resolve([lease({ tenant: 'default' })]);
    const single = await nonHolder(rows, true);
    const page = await request(`${single.url}/v1/events/stream?log=career`, { headers: AUTH });
    await page.body.dump();
    expect(page.statusCode).toBe(307);
    expect(page.headers.location).toBe('http://127.0.0.1:2/b/v1/events/stream?log=career');
    const withTenants = await nonHolder(rows, false);
    const other = await request(`${withTenants.url}/v1/events`, { headers: AUTH });
    await other.body.dump();
    expect(other.statusCode).toBe(404);
  });

  it('names a holder that advertises no URL, with Retry-After of a lease round', async () => {
    const { url } = await nonHolder(() => Promise.resolve([lease({ holderUrl: undefined })]));
    const res = await request(`${url}/v1/tenants/acme/events`, { headers: AUTH });
    expect(res.statusCode).toBe(503);
    expect(res.headers['retry-after']).toBe('5');
    const body = (await res.body.json()) as { type: string; holder: string; detail: string };
    expect(body).toMatchObject({ type: '/v1/problems/tenant-elsewhere', holder: 'replica-b' });
    expect(body.detail).toContain('cluster.advertiseUrl');
  });

  it('answers 401 before reading the lease table, alike for a tenant held elsewhere and an unknown one', async () => {
    const replica = await nonHolder(() => Promise.resolve([lease()]));
    const held = await request(`${replica.url}/v1/tenants/acme/events`, {
      headers: { authorization: 'Bearer wrong-token-0123456789' },
    });
    const unknown = await request(`${replica.url}/v1/tenants/nobody/events`);
    expect([held.statusCode, unknown.statusCode]).toEqual([401, 401]);
    expect(await held.body.text()).toBe(await unknown.body.text());
    const posted = await request(`${replica.url}/v1/tenants/acme/events`, { method: 'POST', body: '{}' });
    expect(posted.statusCode).toBe(405);
    await posted.body.dump();
    expect(replica.reads()).toBe(0);
  });

  it("answers 503 without the store's words when the lease table cannot be read, and keeps serving", async () => {
    const replica = await nonHolder(() =>
      Promise.reject(new Error('connect ECONNREFUSED postgres://admin:hunter2@db.internal:5432')),
    );
    for (let i = 0; i < 3; i++) {
      const res = await request(`${replica.url}/v1/tenants/acme/events`, { headers: AUTH });
      expect(res.statusCode).toBe(503);
      const text = await res.body.text();
      expect(text).not.toContain('hunter2');
      expect(text).not.toContain('db.internal');
    }
    expect(replica.reads()).toBe(1);
  });

  it('reads the lease table once for a flood of requests with made-up tenant names', async () => {
    const replica = await nonHolder(() => Promise.resolve([lease()]));
    const answers = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        const res = await request(`${replica.url}/v1/tenants/made-up-${i}/events`, { headers: AUTH });
        await res.body.dump();
        return res.statusCode;
      }),
    );
    expect(new Set(answers)).toEqual(new Set([503]));
    expect(replica.reads()).toBe(1);
  });
});
