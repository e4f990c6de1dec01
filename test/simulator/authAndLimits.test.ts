import { describe, expect, it } from 'vitest';
import { ManualClock } from '../support/manualClock.js';
import { call, useSimulator } from './simulatorClient.js';

const START = Date.UTC(2026, 0, 1);

describe('authentication and scopes', () => {
  it('issues a seed-derived key of the spec shape', async () => {
    const sim = await useSimulator({ clock: new ManualClock(START), seed: 42 });
    expect(sim.apiKey).toMatch(/^sim_live_[A-Za-z0-9]{32}$/);
    expect((await call(sim, '/api/v1/ping')).status).toBe(200);
  });

  it('answers every kind of credential failure with the same generic 401', async () => {
    const sim = await useSimulator({ clock: new ManualClock(START) });
    sim.addApiKey('sim_live_revokedrevokedrevokedrevoked00', ['careers:read']);
    sim.revokeApiKey('sim_live_revokedrevokedrevokedrevoked00');
    const replies = [
      await call(sim, '/api/v1/ping', { key: null }),
      await call(sim, '/api/v1/ping', { authorization: `Basic ${sim.apiKey}` }),
      await call(sim, '/api/v1/ping', { authorization: 'Bearer' }),
      await call(sim, '/api/v1/ping', { key: 'sim_live_neverexistedneverexistedneverex' }),
      await call(sim, '/api/v1/ping', { key: 'sim_live_revokedrevokedrevokedrevoked00' }),
    ];
    for (const reply of replies) {
      expect(reply.status).toBe(401);
      expect(reply.headers.get('content-type')).toBe('application/problem+json');
      const { requestId, ...rest } = reply.json;
      expect(requestId).toBe(reply.headers.get('x-request-id'));
      expect(rest).toEqual({
        type: 'https://errors.skills.example/invalid-credential',
        title: 'Invalid credential',
        status: 401,
        detail: 'The request could not be authenticated.',
        instance: '/api/v1/ping',
      });
    }
  });

  it('answers 403 insufficient-scope naming the missing scope, while ping needs none', async () => {
    const sim = await useSimulator({ clock: new ManualClock(START) });
    sim.addApiKey('sim_live_peopleonlypeopleonlypeopleonly00', ['people:read']);
    const key = 'sim_live_peopleonlypeopleonlypeopleonly00';
    const career = await call(sim, `/api/v1/careers/${sim.careerIds[0]}/activity`, { key });
    expect(career.status).toBe(403);
    expect(career.json.type).toBe('https://errors.skills.example/insufficient-scope');
    expect(career.json.detail).toContain('careers:read');
    const skills = await call(sim, '/api/v1/skills', { key });
    expect(skills.status).toBe(403);
    expect(skills.json.detail).toContain('skills:read');
    expect((await call(sim, '/api/v1/identity-provider-events', { key })).status).toBe(200);
    sim.addApiKey('sim_live_noscopesnoscopesnoscopesnosc00', []);
    expect((await call(sim, '/api/v1/ping', { key: 'sim_live_noscopesnoscopesnoscopesnosc00' })).status).toBe(200);
  });

  it('applies a scope change on the very next request', async () => {
    const sim = await useSimulator({ clock: new ManualClock(START) });
    const key = 'sim_live_changingchangingchangingchan00';
    sim.addApiKey(key, ['careers:read']);
    expect((await call(sim, '/api/v1/careers', { key })).status).toBe(200);
    sim.addApiKey(key, ['skills:read']);
    expect((await call(sim, '/api/v1/careers', { key })).status).toBe(403);
  });

  it('answers 403 trial_expired with an upgrade_url while the trial fault is on', async () => {
    const sim = await useSimulator({ clock: new ManualClock(START), faults: { trialExpired: true } });
    const reply = await call(sim, '/api/v1/ping');
    expect(reply.status).toBe(403);
    expect(reply.json.error).toBe('trial_expired');
    expect(reply.json.upgrade_url).toMatch(/^https:\/\//);
    expect(reply.json.requestId).toBe(reply.headers.get('x-request-id'));
  });
});

describe('reads bucket', () => {
  it('counts every authenticated GET and answers 429 with Retry-After once the window is spent', async () => {
    const clock = new ManualClock(START);
    const sim = await useSimulator({ clock, readsPerHour: 3 });
    const remaining: Array<string | null> = [];
    remaining.push((await call(sim, '/api/v1/ping')).headers.get('ratelimit-remaining'));
    remaining.push((await call(sim, '/api/v1/careers/car_missing/activity')).headers.get('ratelimit-remaining'));
    remaining.push((await call(sim, '/api/v1/identity-provider-events?limit=0')).headers.get('ratelimit-remaining'));
    expect(remaining).toEqual(['2', '1', '0']);
    await clock.advance(1_000_500);
    const limited = await call(sim, '/api/v1/ping');
    expect(limited.status).toBe(429);
    expect(limited.json.type).toBe('https://errors.skills.example/rate-limit-exceeded');
    expect(limited.headers.get('retry-after')).toBe('2600');
    expect(limited.headers.get('ratelimit-reset')).toBe('2600');
    expect(limited.headers.get('ratelimit-limit')).toBe('3');
    expect(limited.headers.get('ratelimit-remaining')).toBe('0');
    await clock.advanceTo(START + 3_600_000);
    const fresh = await call(sim, '/api/v1/ping');
    expect(fresh.status).toBe(200);
    expect(fresh.headers.get('ratelimit-remaining')).toBe('2');
    expect(fresh.headers.get('ratelimit-reset')).toBe('3600');
  });

  it('does not count requests that fail authentication or are not GETs', async () => {
    const sim = await useSimulator({ clock: new ManualClock(START), readsPerHour: 5 });
    await call(sim, '/api/v1/ping', { key: 'wrong' });
    await call(sim, '/api/v1/ping', { method: 'DELETE' });
    const reply = await call(sim, '/api/v1/ping');
    expect(reply.headers.get('ratelimit-remaining')).toBe('4');
  });

  it('keeps a separate bucket per key', async () => {
    const sim = await useSimulator({ clock: new ManualClock(START), readsPerHour: 1 });
    sim.addApiKey('sim_live_secondsecondsecondsecondseco00', ['people:read']);
    expect((await call(sim, '/api/v1/ping')).status).toBe(200);
    expect((await call(sim, '/api/v1/ping')).status).toBe(429);
    expect((await call(sim, '/api/v1/ping', { key: 'sim_live_secondsecondsecondsecondseco00' })).status).toBe(200);
  });

  it('reflects reads spent by another client of the same key', async () => {
    const clock = new ManualClock(START);
    const sim = await useSimulator({ clock, readsPerHour: 600 });
    const first = await call(sim, '/api/v1/ping');
    expect(first.headers.get('ratelimit-limit')).toBe('600');
    expect(first.headers.get('ratelimit-remaining')).toBe('599');
    sim.spendReads(sim.apiKey, 500);
    expect((await call(sim, '/api/v1/ping')).headers.get('ratelimit-remaining')).toBe('98');
    sim.spendReads(sim.apiKey, 98);
    expect((await call(sim, '/api/v1/ping')).status).toBe(429);
  });

  it('stamps Date from the injected clock and carries the rate-limit headers on every response', async () => {
    const clock = new ManualClock(Date.UTC(2030, 5, 15, 12, 30, 45));
    const sim = await useSimulator({ clock });
    for (const reply of [
      await call(sim, '/api/v1/ping'),
      await call(sim, '/nowhere'),
      await call(sim, '/api/v1/ping', { key: null }),
    ]) {
      expect(reply.headers.get('date')).toBe('Sat, 15 Jun 2030 12:30:45 GMT');
      expect(reply.headers.get('x-request-id')).toMatch(/^req_/);
      for (const h of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'])
        expect(reply.headers.get(h)).toMatch(/^\d+$/);
    }
  });

  it('records every request with its clock time, status and only the last four characters of the key', async () => {
    const clock = new ManualClock(START);
    const sim = await useSimulator({ clock });
    await call(sim, '/api/v1/identity-provider-events?limit=5&event=user_updated');
    await clock.advance(1000);
    await call(sim, '/api/v1/ping', { key: 'bogus-key-1234' });
    expect(sim.requests).toEqual([
      {
        at: START,
        method: 'GET',
        path: '/api/v1/identity-provider-events',
        query: { limit: '5', event: 'user_updated' },
        status: 200,
        apiKeySuffix: sim.apiKey.slice(-4),
        company: 0,
        instanceId: null,
      },
      {
        at: START + 1000,
        method: 'GET',
        path: '/api/v1/ping',
        query: {},
        status: 401,
        apiKeySuffix: '1234',
        company: null,
        instanceId: null,
      },
    ]);
  });
});
