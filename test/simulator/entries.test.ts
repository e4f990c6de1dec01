import { describe, expect, it } from 'vitest';
import { ManualClock } from '../support/manualClock.js';
import { EVENT_CATALOGS } from '../../src/simulator/index.js';
import { call, readAll, useSimulator } from './simulatorClient.js';

const HOUR = 3_600_000;
const START = Date.UTC(2026, 0, 1);

describe('entry shapes', () => {
  it('fills the envelope and the per-log extra fields of section 6', async () => {
    const sim = await useSimulator({ clock: new ManualClock(START), historyHours: 6, eventsPerHour: 600 });
    const entries = sim.visibleEntries();
    const envelope = ['id', 'event', 'description', 'performedById', 'performedAt'];
    const extras = {
      career: ['emailSent', 'relatedPersonId', 'relatedSkillId', 'relatedSectionId', 'relatedLevelId', 'bulkGroupId'],
      skill: ['versionId', 'affectedUserCount', 'renewalOption'],
      identity_provider: [
        'oldValue',
        'newValue',
        'payloadSummary',
        'source',
        'externalMemberId',
        'relatedPersonId',
        'relatedPersonName',
        'relatedGroupId',
        'relatedGroupName',
      ],
    };
    for (const log of ['career', 'skill', 'identity_provider'] as const) {
      const ofLog = entries.filter((e) => e.log === log);
      expect(ofLog.length).toBeGreaterThan(10);
      for (const { entry } of ofLog) {
        expect(Object.keys(entry).sort()).toEqual([...envelope, ...extras[log]].sort());
        expect(EVENT_CATALOGS[log]).toContain(entry.event);
        expect(entry.id).toMatch(/^act_[0-9a-z]{12}$/);
        if (log === 'identity_provider') expect(entry.performedById).toBeNull();
      }
    }
    expect(new Set(entries.map((e) => e.entry.id)).size).toBe(entries.length);
    expect(entries.some((e) => e.log === 'career' && typeof e.entry.bulkGroupId === 'string')).toBe(true);
  });

  it(
    'publishes the three catalogs: about 40 career events, exactly 3 skill events, 13 ' + 'identity-provider events',
    () => {
      const { career, skill, identity_provider: identityProvider } = EVENT_CATALOGS;
      expect(career).toHaveLength(40);
      expect(skill).toEqual(['baseline', 'version_created', 'renew_training']);
      expect(identityProvider).toHaveLength(13);
      for (const name of [...career, ...identityProvider]) expect(name).toMatch(/^[a-z]+(_[a-z]+)*$/);
      expect(new Set(career).size).toBe(40);
    },
  );

  it('nulls events and performedAt and adds unknown fields at the configured shares', async () => {
    const sim = await useSimulator({
      clock: new ManualClock(START),
      nullEventShare: 1,
      nullPerformedAtShare: 1,
      unknownFieldsShare: 1,
    });
    const entries = sim.visibleEntries();
    expect(entries.length).toBeGreaterThan(100);
    for (const { entry } of entries) {
      expect(entry.event).toBeNull();
      expect(entry.performedAt).toBeNull();
      expect(entry.x_internal).toEqual(expect.objectContaining({ shard: expect.any(Number) }));
    }
  });

  it('filters and sorts entries with a null performedAt by their hidden recorded time', async () => {
    const clock = new ManualClock(START);
    const sim = await useSimulator({
      clock,
      nullPerformedAtShare: 0.5,
      eventsPerHour: 3000,
      identityProviderShare: 1,
      skillShare: 0,
    });
    const all = await readAll(sim, '/api/v1/identity-provider-events');
    expect(all.filter((e) => e.performedAt === null).length).toBeGreaterThan(all.length / 4);
    const mid = new Date(START - HOUR).toISOString();
    const before = await readAll(sim, '/api/v1/identity-provider-events', `&to=${mid}`);
    const after = await readAll(sim, '/api/v1/identity-provider-events', `&from=${mid}`);
    expect(before.length).toBeGreaterThan(0);
    expect(after.length).toBeGreaterThan(0);
    // The two windows partition the log and, concatenated, keep the full listing's order.
    expect([...after, ...before].map((e) => e.id)).toEqual(all.map((e) => e.id));
  });
});

describe('appended entries', () => {
  it('appends a burst of 12,000 entries in one career that pages up to the offset cap', async () => {
    const clock = new ManualClock(START);
    const sim = await useSimulator({ clock, eventsPerHour: 0 });
    const career = sim.careerIds[0]!;
    const burst = sim.appendBurst('career', career, 12_000, { from: START - HOUR, to: START });
    expect(burst).toHaveLength(12_000);
    for (const e of burst) {
      const at = Date.parse(e.performedAt!);
      expect(at).toBeGreaterThanOrEqual(START - HOUR);
      expect(at).toBeLessThan(START);
    }
    const last = await call(sim, `/api/v1/careers/${career}/activity?limit=200&offset=10000`);
    expect(last.status).toBe(200);
    expect(last.json.data).toHaveLength(200);
    const beyond = await call(sim, `/api/v1/careers/${career}/activity?limit=200&offset=10001`);
    expect(beyond.status).toBe(400);
  });

  it('holds back appended entries until their arrival time', async () => {
    const clock = new ManualClock(START);
    const sim = await useSimulator({ clock, eventsPerHour: 0 });
    const [entry] = sim.appendEntries('identity_provider', null, [{ event: 'user_provisioned' }], {
      arrivesAt: START + 60_000,
    });
    expect(sim.visibleEntries()).toEqual([]);
    await clock.advance(60_000);
    expect(sim.visibleEntries().map((e) => e.entry.id)).toEqual([entry!.id]);
    expect(entry!.performedAt).toBe(new Date(START).toISOString());
  });

  it('rejects appends to unknown objects and per-object ids on the company-wide log', async () => {
    const sim = await useSimulator({ clock: new ManualClock(START) });
    expect(() => sim.appendEntries('career', 'car_missing', [{}])).toThrow(/no live career/);
    expect(() => sim.appendEntries('identity_provider', 'x', [{}])).toThrow(/company-wide/);
  });
});
