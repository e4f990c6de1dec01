import { describe, expect, it } from 'vitest';
import { ManualClock } from '../support/manualClock.js';
import { instanceIdFrom, MAX_COMPANIES, startSimulator } from '../../src/simulator/index.js';
import { call, readAll, useSimulator } from './simulatorClient.js';

const START = Date.UTC(2026, 0, 1);
const agent = (instanceId: string) => `skills-changefeed/0.1.0 (${instanceId})`;

/** A GET with a chosen key and User-Agent, straight over loopback HTTP. */
async function get(url: string, key: string, userAgent?: string): Promise<Response> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (userAgent !== undefined) headers['user-agent'] = userAgent;
  const res = await fetch(url, { headers });
  await res.arrayBuffer();
  return res;
}

describe('many companies', () => {
  it('gives each company its own key, careers, skills and activity; the first is the single-company simulator', async () => {
    const clock = new ManualClock(START);
    const single = await useSimulator({ clock, seed: 9, careers: 4, skills: 2 });
    const sim = await useSimulator({ clock, seed: 9, careers: 4, skills: 2, companies: 3 });
    expect(sim.companies.map((c) => c.index)).toEqual([0, 1, 2]);
    const [first, second, third] = sim.companies;
    expect(first!.apiKey).toBe(single.apiKey);
    expect(sim.apiKey).toBe(single.apiKey);
    expect(first!.careerIds).toEqual(single.careerIds);
    expect(first!.visibleEntries()).toEqual(single.visibleEntries());
    expect(new Set(sim.companies.map((c) => c.apiKey)).size).toBe(3);
    for (const company of [second!, third!]) {
      expect(company.apiKey).toMatch(/^sim_live_[A-Za-z0-9]{32}$/);
      expect(company.careerIds).toHaveLength(4);
      expect(company.skillIds).toHaveLength(2);
      expect(company.careerIds.filter((id) => first!.careerIds.includes(id))).toEqual([]);
    }
    // Each key reads its own company: lists, per-object logs and the company-wide log.
    const careers = await call<{ data: Array<{ id: string }> }>(sim, '/api/v1/careers', { key: second!.apiKey });
    expect(careers.json.data.map((c) => c.id)).toEqual(second!.careerIds);
    const idp = (key: string) =>
      call<{ data: Array<{ id: string }> }>(sim, '/api/v1/identity-provider-events?limit=200', { key });
    const ids = (entries: Array<{ id: string }>) => entries.map((e) => e.id);
    expect(ids((await idp(second!.apiKey)).json.data)).toEqual(
      second!
        .visibleEntries()
        .filter((e) => e.log === 'identity_provider')
        .map((e) => e.entry.id)
        .reverse()
        .slice(0, 200),
    );
    expect(ids((await idp(second!.apiKey)).json.data)).not.toEqual(ids((await idp(third!.apiKey)).json.data));
    const own = await readAll(sim, `/api/v1/careers/${first!.careerIds[0]}/activity`);
    expect(own.length).toBeGreaterThan(0);
  });

  it("answers 404 for another company's career, as the service does", async () => {
    const sim = await useSimulator({ clock: new ManualClock(START), companies: 2, careers: 2, skills: 1 });
    const [first, second] = sim.companies;
    const foreign = await call(sim, `/api/v1/careers/${second!.careerIds[0]}/activity`, { key: first!.apiKey });
    expect(foreign.status).toBe(404);
    const own = await call(sim, `/api/v1/careers/${second!.careerIds[0]}/activity`, { key: second!.apiKey });
    expect(own.status).toBe(200);
  });

  it("keeps each company's reads bucket to itself: one spent to 429 leaves the other untouched", async () => {
    const clock = new ManualClock(START);
    const sim = await useSimulator({ clock, companies: 2, readsPerHour: 3, careers: 1, skills: 1 });
    const [first, second] = sim.companies;
    const ping = (key: string) => get(`${sim.url}/api/v1/ping`, key);
    const firstStatuses = [];
    for (let i = 0; i < 4; i++) firstStatuses.push((await ping(first!.apiKey)).status);
    expect(firstStatuses).toEqual([200, 200, 200, 429]);
    const other = await ping(second!.apiKey);
    expect(other.status).toBe(200);
    expect(other.headers.get('ratelimit-remaining')).toBe('2');
    expect(other.headers.get('ratelimit-reset')).toBe('3600');
    sim.spendReads(second!.apiKey, 2);
    expect((await ping(second!.apiKey)).status).toBe(429);
    await clock.advance(3_600_000);
    expect((await ping(first!.apiKey)).headers.get('ratelimit-remaining')).toBe('2');
  });

  it('answers an unknown key with 401, counted in no bucket and attributed to no company', async () => {
    const clock = new ManualClock(START);
    const sim = await useSimulator({ clock, companies: 2, readsPerHour: 1, careers: 1, skills: 1 });
    const unknown = await get(`${sim.url}/api/v1/ping`, 'sim_live_notakeyofanycompanynotakeyofany', agent('a'));
    expect(unknown.status).toBe(401);
    for (const company of sim.companies) {
      expect((await get(`${sim.url}/api/v1/ping`, company.apiKey)).status).toBe(200);
    }
    expect(sim.requests[0]).toMatchObject({
      at: START,
      company: null,
      instanceId: 'a',
      path: '/api/v1/ping',
      status: 401,
    });
  });

  it('routes a key added to a company to that company, and refuses to move a key between companies', async () => {
    const sim = await useSimulator({ clock: new ManualClock(START), companies: 2, careers: 1, skills: 1 });
    const second = sim.companies[1]!;
    const extra = 'sim_live_extrakeyofthesecondcompany000';
    second.addApiKey(extra, ['careers:read']);
    const careers = await call<{ data: Array<{ id: string }> }>(sim, '/api/v1/careers', { key: extra });
    expect(careers.json.data.map((c) => c.id)).toEqual(second.careerIds);
    expect((await call(sim, '/api/v1/skills', { key: extra })).status).toBe(403);
    expect(() => sim.addApiKey(extra, ['careers:read'])).toThrow(/company 1/);
    sim.revokeApiKey(second.apiKey);
    expect((await call(sim, '/api/v1/ping', { key: second.apiKey })).status).toBe(401);
  });

  it('records which instance made each request, for which company, when, where and with what status', async () => {
    const clock = new ManualClock(START);
    const sim = await useSimulator({ clock, companies: 2, careers: 1, skills: 1 });
    const [first, second] = sim.companies;
    await get(`${sim.url}/api/v1/identity-provider-events?limit=5`, first!.apiKey, agent('replica-a'));
    await clock.advance(1_000);
    await get(`${sim.url}/api/v1/careers/${second!.careerIds[0]}/activity`, second!.apiKey, agent('replica-b'));
    await get(`${sim.url}/api/v1/careers/${second!.careerIds[0]}/activity`, first!.apiKey, agent('replica-a'));
    await get(`${sim.url}/api/v1/ping`, second!.apiKey, 'curl/8.5.0');
    expect(sim.requests).toMatchObject([
      { at: START, company: 0, instanceId: 'replica-a', path: '/api/v1/identity-provider-events', status: 200 },
      {
        at: START + 1_000,
        company: 1,
        instanceId: 'replica-b',
        path: `/api/v1/careers/${second!.careerIds[0]}/activity`,
        status: 200,
      },
      {
        at: START + 1_000,
        company: 0,
        instanceId: 'replica-a',
        path: `/api/v1/careers/${second!.careerIds[0]}/activity`,
        status: 404,
      },
      { at: START + 1_000, company: 1, instanceId: null, path: '/api/v1/ping', status: 200 },
    ]);
  });

  it('records nothing when told not to (the simulate command, where nothing reads the record)', async () => {
    const sim = await useSimulator({ clock: new ManualClock(START), companies: 2, recordRequests: false });
    await get(`${sim.url}/api/v1/ping`, sim.companies[1]!.apiKey, agent('replica-a'));
    expect(sim.requests).toEqual([]);
  });

  it.each([0, 1.5, MAX_COMPANIES + 1])('refuses %s companies', async (companies) => {
    await expect(startSimulator({ clock: new ManualClock(START), companies })).rejects.toThrow(/companies/);
  });
});

describe('instanceIdFrom', () => {
  it.each([
    ['skills-changefeed/0.1.0 (pod-7)', 'pod-7'],
    ['skills-changefeed/1.2.3-rc.1 (changefeed-7d9f8b6c5-x2k4q.eu:w@n+2_a)', 'changefeed-7d9f8b6c5-x2k4q.eu:w@n+2_a'],
    ['skills-changefeed/0.1.0 (pod 7)', null],
    ['skills-changefeed/0.1.0 ()', null],
    ['skills-changefeed/0.1.0', null],
    ['other-client/0.1.0 (pod-7)', null],
    ['skills-changefeed/0.1.0 (pod-7) extra', null],
    [`skills-changefeed/0.1.0 (${'p'.repeat(129)})`, null],
    [undefined, null],
  ])('%j -> %j', (userAgent, expected) => {
    expect(instanceIdFrom(userAgent)).toBe(expected);
  });
});
