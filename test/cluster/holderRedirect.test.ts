import { issueTicket } from '../../src/feed/feedTicket.js';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { freePort, until } from '../support/daemonProcess.js';
import { runCliInProcess as runCli } from '../support/runCli.js';
import { sampleValue } from '../support/metricsText.js';
import { startPrefixIngress } from '../support/prefixIngress.js';
import { connectAdmin, deliveredIds, simulatedCompanies, startReplicaSet, writeRound } from './replicaHarness.js';

const TOKEN = 'routing-test-token-0123456789';
const AUTH = { authorization: `Bearer ${TOKEN}` };

/**
 * Two replicas on one PostgreSQL schema, each with its own feed port and cluster.advertiseUrl,
 * behind one origin that routes `/a/...` and `/b/...` to their feeds (an ingress): a client's
 * bearer token then follows a redirect, which a fetch client drops when a redirect changes
 * origin. Each also has its health server (`ports`) at cluster.advertiseHealthUrl. The token of
 * every tenant lives in the main file (feed.allTenantsTokens).
 */
async function twoReplicasWithFeeds(seed: number, options: { ingress: boolean } = { ingress: true }) {
  const admin = await connectAdmin('replicas redirecting feed requests to the holder');
  if (!admin) return undefined;
  const simulator = await simulatedCompanies(seed, 2);
  const set = startReplicaSet(admin, simulator, {
    leaseSeconds: 6,
    companies: 2,
    mainLines: [`feed: { enabled: true, allTenantsTokens: ["${TOKEN}"] }`],
  });
  const ports = new Map([
    ['a', await freePort()],
    ['b', await freePort()],
  ]);
  const feedPorts = new Map([
    ['a', await freePort()],
    ['b', await freePort()],
  ]);
  const ingress = await startPrefixIngress(feedPorts);
  for (const [name, port] of ports)
    set.start(`replica-${name}`, {
      CHANGEFEED_HTTP_PORT: String(port),
      CHANGEFEED_FEED_PORT: String(feedPorts.get(name)),
      CHANGEFEED_ADVERTISE_URL: options.ingress ? `${ingress}/${name}` : `http://127.0.0.1:${feedPorts.get(name)}`,
      CHANGEFEED_ADVERTISE_HEALTH_URL: `http://127.0.0.1:${port}`,
    });
  // One tenant each: the assignment deals two tenants to two live replicas evenly.
  await until(
    async () => new Set((await set.holders()).values()).size === 2,
    60_000,
    'each replica holding one of the two tenants',
  );
  writeRound(simulator);
  await until(() => deliveredIds(set, 0).length > 0 && deliveredIds(set, 1).length > 0, 60_000, 'events journaled');
  const holders = await set.holders();
  const tenant = set.tenantName(0);
  const holder = holders.get(tenant)!;
  const other = holder === 'replica-a' ? 'replica-b' : 'replica-a';
  const path = (replica: string): string => replica.slice('replica-'.length);
  return { set, ports, feedPorts, ingress, tenant, holder, other, path, admin };
}

describe('feed requests for a tenant held by another replica', () => {
  it('are redirected (307) to the holder, and a client following redirects gets its events', async () => {
    const setup = await twoReplicasWithFeeds(2501);
    if (!setup) return;
    const { feedPorts, ingress, tenant, holder, other, path } = setup;
    const target = `/v1/tenants/${tenant}/events?limit=5&log=career`;

    const direct = await request(`http://127.0.0.1:${feedPorts.get(path(other))}${target}`, { headers: AUTH });
    await direct.body.dump();
    expect(direct.statusCode).toBe(307);
    expect(direct.headers.location).toMatch(
      new RegExp(`^${escape(`${ingress}/${path(holder)}${target}`)}&cf_ticket=[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]{43}$`),
    );

    // Without a token the non-holder says no more than the holder would: the same 401.
    const anonymous = await request(`http://127.0.0.1:${feedPorts.get(path(other))}${target}`);
    expect(anonymous.statusCode).toBe(401);
    const unknown = await request(`http://127.0.0.1:${feedPorts.get(path(other))}/v1/tenants/no-such/events`);
    expect(unknown.statusCode).toBe(401);
    const anonymousText = await anonymous.body.text();
    expect(await unknown.body.text()).toBe(anonymousText);
    const atHolder = await request(`http://127.0.0.1:${feedPorts.get(path(holder))}${target}`);
    expect(atHolder.statusCode).toBe(401);
    expect(await atHolder.body.text()).toBe(anonymousText);

    const followed = await fetch(`${ingress}/${path(other)}${target}`, { headers: AUTH });
    expect(followed.status).toBe(200);
    expect(followed.redirected).toBe(true);
    expect(followed.url).toMatch(new RegExp(`^${escape(`${ingress}/${path(holder)}${target}`)}&cf_ticket=`));
    const events = (await followed.json()) as { id: string; sequence: string }[];
    expect(events.length).toBeGreaterThan(0);

    // An SSE client resuming with Last-Event-ID at the wrong replica lands on the holder.
    const abort = new AbortController();
    const stream = await fetch(`${ingress}/${path(other)}/v1/tenants/${tenant}/events/stream`, {
      headers: { ...AUTH, 'last-event-id': events[0]!.sequence },
      signal: abort.signal,
    });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    const reader = stream.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!text.includes('\ndata: ')) {
      const { value, done } = (await reader.read()) as { value: Uint8Array | undefined; done: boolean };
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    abort.abort();
    if (events[1]) expect(text).toContain(events[1].id);
  }, 180_000);

  it("status --tenant and check --tenant run with the non-holder's config find the holder", async () => {
    const setup = await twoReplicasWithFeeds(2502);
    if (!setup) return;
    const { set, ports, feedPorts, ingress, tenant, holder, other, path } = setup;
    const othersEnv = {
      CHANGEFEED_HTTP_PORT: String(ports.get(path(other))),
      CHANGEFEED_FEED_PORT: String(feedPorts.get(path(other))),
    };
    const shown = await runCli(['status', '--config', set.config, '--tenant', tenant, '--json'], othersEnv);
    expect(shown.status, shown.stderr).toBe(0);
    const report = JSON.parse(shown.stdout) as {
      daemon: { reachable: boolean; url: string; holder?: string };
      sinks: { name: string; active: boolean; stateSource: string }[];
    };
    expect(report.daemon).toEqual({
      reachable: true,
      url: `http://127.0.0.1:${ports.get(path(holder))}/readyz`,
      holder,
    });
    expect(report.sinks).toEqual([expect.objectContaining({ name: 'out', active: true, stateSource: 'live' })]);

    const checked = await runCli(['check', '--config', set.config, '--tenant', tenant, '--no-ids'], othersEnv);
    expect(checked.stdout).toContain(
      `ok      lease: held by ${holder} at ${ingress}/${path(holder)}; its feed is served at ` +
        `${ingress}/${path(holder)}/v1/tenants/${tenant}/events`,
    );
  }, 180_000);

  it('a client following a redirect to another origin is served through the ticket, which opens nothing else', async () => {
    const setup = await twoReplicasWithFeeds(2503, { ingress: false });
    if (!setup) return;
    const { set, ports, feedPorts, tenant, holder, other, path, admin } = setup;
    const holderFeed = `http://127.0.0.1:${feedPorts.get(path(holder))}`;
    const otherFeed = `http://127.0.0.1:${feedPorts.get(path(other))}`;
    const target = `/v1/tenants/${tenant}/events?limit=1&log=career`;

    // fetch drops Authorization on a redirect to another origin (another port here, another pod
    // IP in Kubernetes): the ticket in the Location stands in for it.
    const followed = await fetch(`${otherFeed}${target}`, { headers: AUTH });
    expect(followed.status).toBe(200);
    expect(followed.redirected).toBe(true);
    expect(followed.url.startsWith(`${holderFeed}${target}&cf_ticket=`)).toBe(true);
    expect(((await followed.json()) as unknown[]).length).toBe(1);
    // The next page is the client's own request to the holder, with its own token: no ticket.
    const link = followed.headers.get('link') ?? '';
    expect(link).toContain(`/v1/tenants/${tenant}/events?`);
    expect(link).not.toContain('cf_ticket');

    const redirect = await request(`${otherFeed}${target}`, { headers: AUTH });
    await redirect.body.dump();
    const location = String(redirect.headers.location);
    const ticket = new URL(location).searchParams.get('cf_ticket')!;
    const expiryOf = (t: string) =>
      (JSON.parse(Buffer.from(t.split('.')[0]!, 'base64url').toString('utf8')) as { e: number }).e;
    // Sent to a replica that does not hold the tenant, a ticket is redirected on, never renewed.
    const bounced = await request(`${otherFeed}${target}&cf_ticket=${ticket}`);
    await bounced.body.dump();
    expect(bounced.statusCode).toBe(307);
    const onward = new URL(String(bounced.headers.location)).searchParams.get('cf_ticket')!;
    expect(expiryOf(onward)).toBe(expiryOf(ticket));
    const otherTenant = set.tenantName(1) === tenant ? set.tenantName(0) : set.tenantName(1);
    const refused = [
      // On another tenant's path (held by the replica that issued it, so served there by a token).
      `${otherFeed}/v1/tenants/${otherTenant}/events?cf_ticket=${ticket}`,
      // On another path of the same tenant.
      `${holderFeed}/v1/tenants/${tenant}/events/stream?cf_ticket=${ticket}`,
      // Tampered.
      `${holderFeed}/v1/tenants/${tenant}/events?cf_ticket=f${ticket.slice(1)}`,
      // Twice.
      `${holderFeed}/v1/tenants/${tenant}/events?cf_ticket=${ticket}&cf_ticket=${ticket}`,
    ];
    for (const url of refused) {
      const answer = await request(url);
      await answer.body.dump();
      expect({ url, status: answer.statusCode }).toEqual({ url, status: 401 });
    }
    // Replayed after its expiry: signed with the cluster's key, expired a while ago.
    const { rows } = await admin.query<{ secret: Buffer }>(
      `SELECT secret FROM "${set.schema}".changefeed_cluster_keys WHERE name = 'feed-ticket'`,
    );
    const readerKey = (JSON.parse(Buffer.from(ticket.split('.')[0]!, 'base64url').toString('utf8')) as { r: string }).r;
    const claim = { tenant, readerKey, path: `/v1/tenants/${tenant}/events` };
    const expired = issueTicket(rows[0]!.secret, claim, Date.now() - 5 * 60_000);
    const late = await request(`${holderFeed}${target}&cf_ticket=${expired}`);
    await late.body.dump();
    expect(late.statusCode).toBe(401);
    // The same claim, fresh, is served: the refusals above were the ticket's, not the key's.
    const fresh = await request(`${holderFeed}${target}&cf_ticket=${issueTicket(rows[0]!.secret, claim, Date.now())}`);
    await fresh.body.dump();
    expect(fresh.statusCode).toBe(200);

    // The routers counted what no tenant's feed saw.
    const metricsOf = async (replica: string) =>
      await (await fetch(`http://127.0.0.1:${ports.get(path(replica))}/metrics`)).text();
    const redirected = { status_class: '3xx', reason: 'redirected' };
    expect(sampleValue(await metricsOf(other), 'changefeed_feed_router_answers_total', redirected)).toBe(3);
    const ticketRefused = { status_class: '4xx', reason: 'ticket_refused' };
    expect(sampleValue(await metricsOf(holder), 'changefeed_feed_router_answers_total', ticketRefused)).toBe(4);
    expect(sampleValue(await metricsOf(other), 'changefeed_feed_router_answers_total', ticketRefused)).toBe(1);
  }, 180_000);
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
