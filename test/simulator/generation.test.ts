import { describe, expect, it } from 'vitest';
import { ManualClock } from '../support/manualClock.js';
import { simulatorOptionsSchema, streamKey, type Simulator } from '../../src/simulator/index.js';
import { readAll, useSimulator } from './simulatorClient.js';

const HOUR = 3_600_000;
const START = Date.UTC(2026, 0, 1);

function countsByStream(sim: Simulator): Map<string, number> {
  const counts = new Map<string, number>();
  for (const { log, objectId } of sim.visibleEntries()) {
    const key = streamKey(log, objectId);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

describe('activity generation', () => {
  it('produces identical entries for the same seed and different ones for another seed', async () => {
    const a = await useSimulator({ clock: new ManualClock(START), seed: 7 });
    const b = await useSimulator({ clock: new ManualClock(START), seed: 7 });
    const c = await useSimulator({ clock: new ManualClock(START), seed: 8 });
    expect(a.apiKey).toBe(b.apiKey);
    expect(a.careerIds).toEqual(b.careerIds);
    expect(a.visibleEntries().length).toBeGreaterThan(0);
    expect(a.visibleEntries()).toEqual(b.visibleEntries());
    expect(c.careerIds).not.toEqual(a.careerIds);
    expect(c.visibleEntries().map((e) => e.entry.id)).not.toEqual(a.visibleEntries().map((e) => e.entry.id));
  });

  it('gives the same activity whether the clock jumps a day at once or crawls in odd steps', async () => {
    const jumping = new ManualClock(START);
    const crawling = new ManualClock(START);
    const a = await useSimulator({ clock: jumping, seed: 3, historyHours: 0 });
    const b = await useSimulator({ clock: crawling, seed: 3, historyHours: 0 });
    await jumping.advance(24 * HOUR);
    for (let t = 0; t < 24 * HOUR; t += 7 * 60_000 + 13_000) {
      await crawling.advanceTo(START + t);
      b.catchUp();
    }
    await crawling.advanceTo(START + 24 * HOUR);
    expect(b.visibleEntries()).toEqual(a.visibleEntries());
  });

  it('reveals activity only as the manual clock moves past its arrival', async () => {
    const clock = new ManualClock(START);
    const sim = await useSimulator({ clock, historyHours: 0, eventsPerHour: 600 });
    expect(sim.visibleEntries()).toEqual([]);
    await clock.advance(HOUR);
    const afterOneHour = sim.visibleEntries();
    // Poisson with mean 600: 5 standard deviations is about 122.
    expect(afterOneHour.length).toBeGreaterThan(600 - 125);
    expect(afterOneHour.length).toBeLessThan(600 + 125);
    for (const { entry } of afterOneHour)
      expect(Date.parse(entry.performedAt as string)).toBeLessThanOrEqual(clock.now());
    await clock.advance(HOUR);
    // Reads generate lazily without an explicit catchUp.
    const ipEvents = await readAll(sim, '/api/v1/identity-provider-events');
    const expected = sim.visibleEntries().filter((e) => e.log === 'identity_provider').length;
    expect(ipEvents).toHaveLength(expected);
    expect(expected).toBeGreaterThan(60);
  });

  it('starts with historyHours of pre-existing activity', async () => {
    const sim = await useSimulator({ clock: new ManualClock(START), historyHours: 4, eventsPerHour: 300 });
    const entries = sim.visibleEntries();
    expect(entries.length).toBeGreaterThan(1200 - 180);
    expect(entries.length).toBeLessThan(1200 + 180);
    const earliest = Math.min(...entries.map((e) => Date.parse(e.entry.performedAt as string)));
    expect(earliest).toBeGreaterThanOrEqual(START - 4 * HOUR);
    expect(earliest).toBeLessThan(START - 3.5 * HOUR);
  });

  it('generates a simulated day of 300 events per hour over 500 objects in well under a second', async () => {
    const clock = new ManualClock(START);
    const sim = await useSimulator({ clock, careers: 400, skills: 100, eventsPerHour: 300, historyHours: 0 });
    await clock.advance(24 * HOUR);
    // CPU time, not wall-clock time: other processes on a busy machine do not count against it.
    const began = process.cpuUsage();
    sim.catchUp();
    const { user, system } = process.cpuUsage(began);
    const count = sim.visibleEntries().length;
    expect((user + system) / 1000).toBeLessThan(500);
    expect(count).toBeGreaterThan(7200 - 450);
    expect(count).toBeLessThan(7200 + 450);
  });

  it('exposes exact per-object rates that sum to eventsPerHour and follow Zipf ranks', async () => {
    const sim = await useSimulator({ clock: new ManualClock(START), careers: 10, skills: 5, eventsPerHour: 1000 });
    const rates = sim.trueRates();
    expect(rates.size).toBe(16);
    expect([...rates.values()].reduce((a, b) => a + b, 0)).toBeCloseTo(1000, 6);
    expect(rates.get('identity_provider:null')).toBeCloseTo(100, 6);
    const careerRates = sim.careerIds.map((id) => rates.get(streamKey('career', id)) ?? 0).sort((x, y) => y - x);
    const harmonic10 = Array.from({ length: 10 }, (_, i) => 1 / (i + 1)).reduce((a, b) => a + b, 0);
    expect(careerRates[0]).toBeCloseTo(700 / harmonic10, 6);
    expect(careerRates[0]! / careerRates[1]!).toBeCloseTo(2, 6);
    expect(careerRates[0]! / careerRates[9]!).toBeCloseTo(10, 6);
    // An object added at run time gets its log's mean rate at start, on top of the others.
    const added = sim.addObject('career');
    expect(sim.trueRates().get(streamKey('career', added))).toBeCloseTo(70, 6);
    expect(sim.careerIds).toContain(added);
  });

  it('gives every object the same rate under the uniform workload', async () => {
    const sim = await useSimulator({
      clock: new ManualClock(START),
      careers: 8,
      workload: { kind: 'uniform' },
      eventsPerHour: 800,
    });
    const rates = sim.trueRates();
    for (const id of sim.careerIds) expect(rates.get(streamKey('career', id))).toBeCloseTo(70, 6);
  });

  it('delivers, over a long run, per-object counts that match the true rates', async () => {
    const clock = new ManualClock(START);
    const sim = await useSimulator({
      clock,
      careers: 10,
      skills: 0,
      skillShare: 0,
      identityProviderShare: 0,
      eventsPerHour: 3000,
      historyHours: 0,
    });
    await clock.advance(24 * HOUR);
    const counts = countsByStream(sim);
    for (const [key, rate] of sim.trueRates()) {
      const expected = rate * 24;
      if (expected === 0) expect(counts.get(key) ?? 0).toBe(0);
      else expect(Math.abs((counts.get(key) ?? 0) - expected)).toBeLessThan(5 * Math.sqrt(expected));
    }
  });

  it(
    'puts bursty activity in sessions of sessionMin..sessionMax events on one object within ' + 'sessionMinutes',
    async () => {
      const clock = new ManualClock(START);
      const sim = await useSimulator({
        clock,
        careers: 5,
        skills: 0,
        skillShare: 0,
        identityProviderShare: 0,
        eventsPerHour: 20,
        historyHours: 0,
        workload: { kind: 'bursty', s: 1, sessionMin: 10, sessionMax: 10, sessionMinutes: 5 },
      });
      await clock.advance(48 * HOUR);
      const byObject = new Map<string, number[]>();
      for (const { objectId, entry } of sim.visibleEntries()) {
        const times = byObject.get(objectId!) ?? [];
        times.push(Date.parse(entry.performedAt as string));
        byObject.set(objectId!, times);
      }
      let sessions = 0;
      for (const times of byObject.values()) {
        times.sort((a, b) => a - b);
        // Split where a gap exceeds a session's length; overlapping sessions merge into multiples.
        let size = 1;
        for (let i = 1; i <= times.length; i++) {
          if (i === times.length || times[i]! - times[i - 1]! > 5 * 60_000) {
            expect(size % 10).toBe(0);
            sessions += size / 10;
            size = 1;
          } else {
            size++;
          }
        }
      }
      // 20 events/hour = 2 sessions/hour; 96 expected over 48 hours.
      expect(sessions).toBeGreaterThan(96 - 50);
      expect(sessions).toBeLessThan(96 + 50);
    },
  );
});

describe('late arrivals', () => {
  it(
    'makes entries appear in a window after it was read, with performedAt up to ' + 'maxDelaySeconds before arrival',
    async () => {
      const clock = new ManualClock(START);
      const sim = await useSimulator({
        clock,
        historyHours: 0,
        eventsPerHour: 1200,
        identityProviderShare: 1,
        skillShare: 0,
        lateArrivals: { share: 0.5, maxDelaySeconds: 60 },
      });
      await clock.advance(30 * 60_000);
      const windowQuery = `&from=${new Date(START).toISOString()}&to=${new Date(clock.now()).toISOString()}`;
      const first = await readAll(sim, '/api/v1/identity-provider-events', windowQuery);
      await clock.advance(60_000);
      const second = await readAll(sim, '/api/v1/identity-provider-events', windowQuery);
      const firstIds = new Set(first.map((e) => e.id));
      const newcomers = second.filter((e) => !firstIds.has(e.id));
      expect(second.length).toBeGreaterThan(first.length);
      expect(newcomers.length).toBe(second.length - first.length);
      for (const e of newcomers)
        expect(Date.parse(e.performedAt!)).toBeGreaterThanOrEqual(START + 30 * 60_000 - 60_000);
    },
  );

  it('never changes a window once read when lateArrivals.share is 0', async () => {
    const clock = new ManualClock(START);
    const sim = await useSimulator({
      clock,
      historyHours: 0,
      eventsPerHour: 1200,
      identityProviderShare: 1,
      skillShare: 0,
    });
    await clock.advance(30 * 60_000);
    const windowQuery = `&from=${new Date(START).toISOString()}&to=${new Date(clock.now()).toISOString()}`;
    const first = await readAll(sim, '/api/v1/identity-provider-events', windowQuery);
    await clock.advance(10 * 60_000);
    const second = await readAll(sim, '/api/v1/identity-provider-events', windowQuery);
    expect(first.length).toBeGreaterThan(300);
    expect(second.map((e) => e.id)).toEqual(first.map((e) => e.id));
  });
});

describe('simulator options', () => {
  it('fills every default so the CLI can map flags onto a partial object', () => {
    const parsed = simulatorOptionsSchema.parse({ workload: { kind: 'bursty' } });
    expect(parsed).toMatchObject({
      host: '127.0.0.1',
      port: 0,
      seed: 1,
      careers: 20,
      skills: 20,
      eventsPerHour: 600,
      identityProviderShare: 0.1,
      skillShare: 0.2,
      historyHours: 2,
      sortOrder: 'newest-first',
      readsPerHour: 1000,
      workload: { kind: 'bursty', s: 1, sessionMin: 5, sessionMax: 30, sessionMinutes: 5 },
      lateArrivals: { share: 0 },
      faults: { errorRate: 0, latencyMs: 0, slowRate: 0, malformedRate: 0, trialExpired: false },
    });
    expect(simulatorOptionsSchema.parse({}).workload).toEqual({ kind: 'zipf', s: 1 });
    for (const [name, field] of Object.entries(simulatorOptionsSchema.shape))
      expect(field.description, name).toBeTruthy();
  });

  it('rejects shares that add up to more than the whole', () => {
    expect(() => simulatorOptionsSchema.parse({ identityProviderShare: 0.6, skillShare: 0.5 })).toThrow(
      /must not exceed 1/,
    );
    expect(() => simulatorOptionsSchema.parse({ workload: { kind: 'bursty', sessionMin: 9, sessionMax: 3 } })).toThrow(
      /sessionMax/,
    );
  });
});
