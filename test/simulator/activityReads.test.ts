import { describe, expect, it } from 'vitest';
import { ManualClock } from '../support/manualClock.js';
import type { Simulator } from '../../src/simulator/index.js';
import { call, readAll, useSimulator } from './simulatorClient.js';

const START = Date.UTC(2026, 0, 1);
const iso = (ms: number): string => new Date(ms).toISOString();

/** A quiet simulator: no generated activity, so tests control every entry. */
async function quietSimulator(
  options: Parameters<typeof useSimulator>[0] = {},
): Promise<{ sim: Simulator; clock: ManualClock }> {
  const clock = new ManualClock(START);
  const sim = await useSimulator({ clock, eventsPerHour: 0, ...options });
  return { sim, clock };
}

async function expectFieldError(sim: Simulator, pathAndQuery: string, field: string, code: string): Promise<void> {
  const reply = await call(sim, pathAndQuery);
  expect(reply.status).toBe(400);
  expect(reply.headers.get('content-type')).toBe('application/problem+json');
  expect(reply.json.type).toBe('https://errors.skills.example/validation-error');
  expect(reply.json.errors).toContainEqual({ field, code, message: expect.any(String) });
}

describe('query validation', () => {
  it('rejects filters a log cannot support with unsupported_filter naming the parameter', async () => {
    const { sim } = await quietSimulator();
    const career = sim.careerIds[0]!;
    const skill = sim.skillIds[0]!;
    await expectFieldError(sim, `/api/v1/skills/${skill}/activity?from=${iso(START)}`, 'from', 'unsupported_filter');
    await expectFieldError(sim, `/api/v1/skills/${skill}/activity?to=${iso(START)}`, 'to', 'unsupported_filter');
    await expectFieldError(
      sim,
      `/api/v1/skills/${skill}/activity?relatedPersonId=per_1`,
      'relatedPersonId',
      'unsupported_filter',
    );
    await expectFieldError(
      sim,
      `/api/v1/skills/${skill}/activity?bulkGroupId=blk_1`,
      'bulkGroupId',
      'unsupported_filter',
    );
    await expectFieldError(
      sim,
      '/api/v1/identity-provider-events?performedBy=per_1',
      'performedBy',
      'unsupported_filter',
    );
    await expectFieldError(
      sim,
      '/api/v1/identity-provider-events?bulkGroupId=blk_1',
      'bulkGroupId',
      'unsupported_filter',
    );
    await expectFieldError(sim, `/api/v1/careers/${career}/activity?sort=performedAt`, 'sort', 'unsupported_filter');
    await expectFieldError(sim, '/api/v1/careers?name=x', 'name', 'unsupported_filter');
  });

  it('accepts every filter the career log supports', async () => {
    const { sim } = await quietSimulator();
    const query = `event=skill_added&from=${iso(START - 1000)}&to=${iso(START)}&performedBy=p&relatedPersonId=q&bulkGroupId=b&limit=10&offset=0`;
    const reply = await call(sim, `/api/v1/careers/${sim.careerIds[0]}/activity?${query}`);
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ data: [], pagination: { limit: 10, offset: 0 } });
  });

  it('rejects an event the log does not know with unknown_event, even one valid on another log', async () => {
    const { sim } = await quietSimulator();
    await expectFieldError(
      sim,
      `/api/v1/skills/${sim.skillIds[0]}/activity?event=skill_added`,
      'event',
      'unknown_event',
    );
    await expectFieldError(
      sim,
      `/api/v1/careers/${sim.careerIds[0]}/activity?event=baseline`,
      'event',
      'unknown_event',
    );
    await expectFieldError(sim, '/api/v1/identity-provider-events?event=USER_PROVISIONED', 'event', 'unknown_event');
    const ok = await call(sim, `/api/v1/skills/${sim.skillIds[0]}/activity?event=renew_training`);
    expect(ok.status).toBe(200);
  });

  it('rejects from and to that are not ISO 8601 UTC timestamps', async () => {
    const { sim } = await quietSimulator();
    const path = '/api/v1/identity-provider-events';
    for (const bad of [
      '2026-01-01',
      'yesterday',
      '2026-01-01T00:00:00+02:00',
      '2026-02-30T00:00:00Z',
      '2026-01-01T24:00:00Z',
      '1767225600000',
    ]) {
      await expectFieldError(sim, `${path}?from=${encodeURIComponent(bad)}`, 'from', 'invalid_timestamp');
    }
    await expectFieldError(sim, `${path}?to=2026-13-01T00:00:00Z`, 'to', 'invalid_timestamp');
    for (const good of ['2026-01-01T00:00:00Z', '2026-01-01T00:00:00.123456Z', '2026-01-01T00:00:00+00:00']) {
      expect((await call(sim, `${path}?from=${encodeURIComponent(good)}`)).status).toBe(200);
    }
  });

  it('rejects limit outside 1..200 and offset outside 0..10000 with out_of_range', async () => {
    const { sim } = await quietSimulator();
    const path = '/api/v1/identity-provider-events';
    for (const limit of ['0', '201', 'abc', '1.5', '-1', ''])
      await expectFieldError(sim, `${path}?limit=${limit}`, 'limit', 'out_of_range');
    for (const offset of ['-1', '10001', 'x'])
      await expectFieldError(sim, `${path}?offset=${offset}`, 'offset', 'out_of_range');
    await expectFieldError(sim, '/api/v1/skills?limit=500', 'limit', 'out_of_range');
    expect((await call(sim, `${path}?limit=200&offset=10000`)).status).toBe(200);
    expect((await call(sim, `${path}?limit=1&offset=0`)).status).toBe(200);
  });

  it('reports every problem of a request at once', async () => {
    const { sim } = await quietSimulator();
    const reply = await call(sim, `/api/v1/skills/${sim.skillIds[0]}/activity?from=x&event=nope&limit=0`);
    expect(reply.status).toBe(400);
    expect(reply.json.errors.map((e: { field: string; code: string }) => `${e.field}:${e.code}`)).toEqual([
      'from:unsupported_filter',
      'event:unknown_event',
      'limit:out_of_range',
    ]);
  });

  it('answers with a complete problem document whose requestId equals X-Request-Id', async () => {
    const { sim } = await quietSimulator();
    const path = `/api/v1/skills/${sim.skillIds[0]}/activity`;
    const reply = await call(sim, `${path}?from=${iso(START)}`);
    expect(reply.json).toEqual({
      type: 'https://errors.skills.example/validation-error',
      title: 'Validation error',
      status: 400,
      detail: expect.stringContaining('from'),
      instance: path,
      requestId: reply.headers.get('x-request-id'),
      errors: [{ field: 'from', code: 'unsupported_filter', message: expect.stringContaining("'from'") }],
    });
    const other = await call(sim, `${path}?from=${iso(START)}`);
    expect(other.headers.get('x-request-id')).not.toBe(reply.headers.get('x-request-id'));
  });
});

describe('ordering, windows and paging', () => {
  it('sorts newest first by default, ties broken by id in the same direction', async () => {
    const { sim } = await quietSimulator();
    const career = sim.careerIds[0]!;
    sim.appendEntries('career', career, [
      { id: 'act_b', performedAt: iso(START - 2000) },
      { id: 'act_a', performedAt: iso(START - 2000) },
      { id: 'act_c', performedAt: iso(START - 1000) },
      { id: 'act_0', performedAt: iso(START - 3000) },
    ]);
    const reply = await call(sim, `/api/v1/careers/${career}/activity`);
    expect(reply.json.data.map((e: { id: string }) => e.id)).toEqual(['act_c', 'act_b', 'act_a', 'act_0']);
  });

  it('sorts oldest first when configured', async () => {
    const { sim } = await quietSimulator({ sortOrder: 'oldest-first' });
    const career = sim.careerIds[0]!;
    sim.appendEntries('career', career, [
      { id: 'act_b', performedAt: iso(START - 2000) },
      { id: 'act_a', performedAt: iso(START - 2000) },
      { id: 'act_c', performedAt: iso(START - 1000) },
      { id: 'act_0', performedAt: iso(START - 3000) },
    ]);
    const reply = await call(sim, `/api/v1/careers/${career}/activity`);
    expect(reply.json.data.map((e: { id: string }) => e.id)).toEqual(['act_0', 'act_a', 'act_b', 'act_c']);
  });

  it('includes from and excludes to', async () => {
    const { sim } = await quietSimulator({ sortOrder: 'oldest-first' });
    const career = sim.careerIds[0]!;
    const t = [START - 3000, START - 2000, START - 1000];
    sim.appendEntries(
      'career',
      career,
      t.map((at, i) => ({ id: `act_${i}`, performedAt: iso(at) })),
    );
    const ids = async (query: string): Promise<string[]> =>
      (await call(sim, `/api/v1/careers/${career}/activity?${query}`)).json.data.map((e: { id: string }) => e.id);
    expect(await ids(`from=${iso(t[1]!)}`)).toEqual(['act_1', 'act_2']);
    expect(await ids(`to=${iso(t[1]!)}`)).toEqual(['act_0']);
    expect(await ids(`from=${iso(t[0]!)}&to=${iso(t[2]!)}`)).toEqual(['act_0', 'act_1']);
    expect(await ids(`from=${iso(t[1]!)}&to=${iso(t[1]!)}`)).toEqual([]);
  });

  it('filters by event, performedBy, relatedPersonId and bulkGroupId equality', async () => {
    const { sim } = await quietSimulator();
    const career = sim.careerIds[0]!;
    sim.appendEntries('career', career, [
      { id: 'act_1', event: 'person_assigned', performedById: 'per_x', relatedPersonId: 'per_a', bulkGroupId: 'blk_1' },
      { id: 'act_2', event: 'person_assigned', performedById: 'per_y', relatedPersonId: 'per_b', bulkGroupId: 'blk_1' },
      { id: 'act_3', event: 'skill_added', performedById: 'per_x', relatedPersonId: null, bulkGroupId: null },
    ]);
    const ids = async (query: string): Promise<string[]> =>
      (await call(sim, `/api/v1/careers/${career}/activity?${query}`)).json.data
        .map((e: { id: string }) => e.id)
        .sort();
    expect(await ids('event=person_assigned')).toEqual(['act_1', 'act_2']);
    expect(await ids('performedBy=per_x')).toEqual(['act_1', 'act_3']);
    expect(await ids('relatedPersonId=per_b')).toEqual(['act_2']);
    expect(await ids('bulkGroupId=blk_1')).toEqual(['act_1', 'act_2']);
    expect(await ids('bulkGroupId=blk_1&performedBy=per_y')).toEqual(['act_2']);
  });

  it('pages with a default limit of 50 and echoes limit and offset', async () => {
    const { sim } = await quietSimulator();
    const career = sim.careerIds[0]!;
    sim.appendBurst('career', career, 120, { from: START - 60_000, to: START });
    const first = await call(sim, `/api/v1/careers/${career}/activity`);
    expect(first.json.data).toHaveLength(50);
    expect(first.json.pagination).toEqual({ limit: 50, offset: 0 });
    const third = await call(sim, `/api/v1/careers/${career}/activity?offset=100`);
    expect(third.json.data).toHaveLength(20);
    const all = await readAll(sim, `/api/v1/careers/${career}/activity`);
    expect(all.map((e) => e.id)).toEqual([
      ...first.json.data.map((e: { id: string }) => e.id),
      ...all.slice(50).map((e) => e.id),
    ]);
    expect(new Set(all.map((e) => e.id)).size).toBe(120);
  });
});

describe('objects and routes', () => {
  it('answers 404 not-found for a deleted career, which also leaves discovery', async () => {
    const { sim } = await quietSimulator({ careers: 3 });
    const [gone, kept] = sim.careerIds;
    expect((await call(sim, `/api/v1/careers/${gone}/activity`)).status).toBe(200);
    sim.deleteObject('career', gone!);
    const reply = await call(sim, `/api/v1/careers/${gone}/activity`);
    expect(reply.status).toBe(404);
    expect(reply.json.type).toBe('https://errors.skills.example/not-found');
    expect((await call(sim, `/api/v1/careers/${kept}/activity`)).status).toBe(200);
    const list = await call(sim, '/api/v1/careers');
    expect(list.json.data.map((c: { id: string }) => c.id)).not.toContain(gone);
    expect(list.json.pagination.total).toBe(2);
    expect(sim.trueRates().has(`career:${gone}`)).toBe(false);
  });

  it('answers 404 for a career that never existed and for an unknown path', async () => {
    const { sim } = await quietSimulator();
    expect((await call(sim, '/api/v1/careers/car_nope/activity')).status).toBe(404);
    const unknown = await call(sim, '/api/v1/assessments');
    expect(unknown.status).toBe(404);
    expect(unknown.json.instance).toBe('/api/v1/assessments');
  });

  it('answers 405 to methods other than GET', async () => {
    const { sim } = await quietSimulator();
    const reply = await call(sim, '/api/v1/careers', { method: 'POST' });
    expect(reply.status).toBe(405);
    expect(reply.headers.get('allow')).toBe('GET');
    expect(reply.headers.get('content-type')).toBe('application/problem+json');
  });

  it('lists careers and skills with paging and a total, and shows added objects', async () => {
    const { sim } = await quietSimulator({ careers: 5, skills: 3 });
    const page = await call(sim, '/api/v1/careers?limit=2&offset=1');
    expect(page.json.pagination).toEqual({ limit: 2, offset: 1, total: 5 });
    expect(page.json.data.map((c: { id: string }) => c.id)).toEqual(sim.careerIds.slice(1, 3));
    for (const c of page.json.data) expect(Object.keys(c).sort()).toEqual(['createdAt', 'id', 'name']);
    const added = sim.addObject('skill', 'skl_custom');
    expect(added).toBe('skl_custom');
    const skills = await call(sim, '/api/v1/skills');
    expect(skills.json.pagination.total).toBe(4);
    expect(skills.json.data.map((s: { id: string }) => s.id)).toContain('skl_custom');
    expect((await call(sim, '/api/v1/skills/skl_custom/activity')).status).toBe(200);
    expect(sim.trueRates().has('skill:skl_custom')).toBe(true);
  });

  it('decodes percent-encoded object ids in the path', async () => {
    const { sim } = await quietSimulator();
    sim.addObject('career', 'car/with space');
    sim.appendEntries('career', 'car/with space', [{ id: 'act_enc' }]);
    const reply = await call(sim, `/api/v1/careers/${encodeURIComponent('car/with space')}/activity`);
    expect(reply.status).toBe(200);
    expect(reply.json.data.map((e: { id: string }) => e.id)).toEqual(['act_enc']);
  });
});
