import { request as rawRequest } from 'node:http';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../support/manualClock.js';
import type { LeaseRow } from '../../src/cluster/leaseTable.js';
import { holderRedirect } from '../../src/daemon/holderRedirect.js';
import { routeTenantFeeds } from '../../src/daemon/tenantFeeds.js';
import { feedConfigSchema } from '../../src/feed/feedConfig.js';
import { listenBounded, type BoundedListener } from '../../src/boundedListener.js';
import { FeedSlots, FeedTokens } from '../../src/feed/feedTokens.js';

const ACME = 'acme-feed-token-0123456789';
const GLOBEX = 'globex-feed-token-0123456789';
const servers: BoundedListener[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

/**
 * A replica's feed listener knowing `acme`, `globex` and (without tenants.dir) `default`, none of
 * them running here, over a lease table the test controls: the real router and holderRedirect,
 * without PostgreSQL.
 */
async function nonHolder(list: () => Promise<LeaseRow[]>): Promise<{ url: string; reads: () => number }> {
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
    // Stands still: every read the test counts is one the requests' own number caused.
    clock: new ManualClock(),
  });
  const config = feedConfigSchema.parse({ enabled: true, port: 0 });
  const tokens = new FeedTokens([
    { token: ACME, reads: { kind: 'tenant', tenant: 'acme' } },
    { token: ACME, reads: { kind: 'tenant', tenant: 'default' } },
    { token: GLOBEX, reads: { kind: 'tenant', tenant: 'globex' } },
  ]);
  const known = new Set(['acme', 'globex', 'default']);
  const routes = {
    tokens: () => tokens,
    slots: new FeedSlots(config),
    feedOf: () => undefined,
    knows: (tenant: string) => known.has(tenant),
    elsewhere: () => elsewhere,
  };
  const server = await listenBounded(config, (req, res) => routeTenantFeeds(req, res, routes));
  servers.push(server);
  return { url: server.url, reads: () => reads };
}

const lease = (over: Partial<LeaseRow> = {}): LeaseRow => ({
  tenant: 'acme',
  holder: 'replica-b',
  epoch: 3,
  expiresInMs: 10_000,
  holderLive: true,
  holderLiveForMs: 15_000,
  holderUrl: 'http://127.0.0.1:2/b',
  holderHealthUrl: undefined,
  ...over,
});
const AUTH = { authorization: `Bearer ${ACME}` };

describe('a replica not running the tenant', () => {
  it('redirects with the path and query only, whatever origin the request target names', async () => {
    const replica = await nonHolder(() => Promise.resolve([lease(), lease({ tenant: 'default' })]));
    const page = await request(`${replica.url}/v1/events/stream?log=career`, { headers: AUTH });
    await page.body.dump();
    expect(page.statusCode).toBe(307);
    expect(page.headers.location).toBe('http://127.0.0.1:2/b/v1/events/stream?log=career');
    // An absolute-form request target: its origin must not end up in the Location.
    const absolute = await new Promise<{ status: number | undefined; location: string | undefined }>(
      (resolve, reject) => {
        const { port } = new URL(replica.url);
        rawRequest(
          { host: '127.0.0.1', port, path: 'http://evil.example/v1/tenants/acme/events?after=3', headers: AUTH },
          (res) => {
            res.resume();
            resolve({ status: res.statusCode, location: res.headers.location });
          },
        )
          .on('error', reject)
          .end();
      },
    );
    expect(absolute.status).toBe(307);
    expect(absolute.location).toBe('http://127.0.0.1:2/b/v1/tenants/acme/events?after=3');
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

  it('reads no lease and names no holder for a token that does not read the tenant, or without one', async () => {
    const replica = await nonHolder(() => Promise.resolve([lease()]));
    const otherTenants = await request(`${replica.url}/v1/tenants/acme/events`, {
      headers: { authorization: `Bearer ${GLOBEX}` },
    });
    const unknown = await request(`${replica.url}/v1/tenants/nobody/events`, {
      headers: { authorization: `Bearer ${GLOBEX}` },
    });
    expect([otherTenants.statusCode, unknown.statusCode]).toEqual([404, 404]);
    expect(await otherTenants.body.text()).toBe(await unknown.body.text());
    const anonymous = await request(`${replica.url}/v1/tenants/acme/events`);
    expect(anonymous.statusCode).toBe(401);
    await anonymous.body.dump();
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

  it('reads the lease table once for a flood of requests', async () => {
    const replica = await nonHolder(() => Promise.resolve([lease()]));
    const answers = await Promise.all(
      Array.from({ length: 50 }, async () => {
        const res = await request(`${replica.url}/v1/tenants/acme/events`, { headers: AUTH });
        await res.body.dump();
        return res.statusCode;
      }),
    );
    expect(new Set(answers)).toEqual(new Set([307]));
    expect(replica.reads()).toBe(1);
  });
});
