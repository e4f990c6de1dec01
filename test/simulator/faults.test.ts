import { describe, expect, it } from 'vitest';
import { ManualClock } from '../support/manualClock.js';
import { until } from '../support/daemonProcess.js';
import { call, useSimulator } from './simulatorClient.js';

const START = Date.UTC(2026, 0, 1);

// The deadline only turns a hang into a failure: a loaded machine may take more than a second.
const waitFor = (condition: () => boolean): Promise<void> => until(condition, 30_000, 'the condition');

describe('injected faults', () => {
  it('fails reads transiently with 500 problems and non-JSON 502/503 bodies at errorRate 1', async () => {
    const sim = await useSimulator({ clock: new ManualClock(START), faults: { errorRate: 1 }, readsPerHour: 1000 });
    const seen = new Map<number, number>();
    for (let i = 0; i < 80; i++) {
      const reply = await call(sim, '/api/v1/identity-provider-events');
      seen.set(reply.status, (seen.get(reply.status) ?? 0) + 1);
      if (reply.status === 500) {
        expect(reply.headers.get('content-type')).toBe('application/problem+json');
        expect(reply.json.type).toBe('https://errors.skills.example/internal-error');
        expect(reply.json.requestId).toBe(reply.headers.get('x-request-id'));
      } else {
        expect([502, 503]).toContain(reply.status);
        expect(reply.isJson).toBe(false);
      }
    }
    expect([...seen.keys()].sort()).toEqual([500, 502, 503]);
    expect(seen.get(500)!).toBeGreaterThan(40);
  });

  it('sends 200 list responses that are not JSON or whose data is not an array at malformedRate 1', async () => {
    const sim = await useSimulator({ clock: new ManualClock(START), faults: { malformedRate: 1 } });
    for (let i = 0; i < 20; i++) {
      const reply = await call(sim, `/api/v1/careers/${sim.careerIds[0]}/activity`);
      expect(reply.status).toBe(200);
      expect(!reply.isJson || !Array.isArray(reply.json.data)).toBe(true);
    }
    const ping = await call<{ data: { status: string } }>(sim, '/api/v1/ping');
    expect(ping.json.data.status).toBe('ok');
  });

  it('holds a response back for latencyMs of the injected clock', async () => {
    const clock = new ManualClock(START);
    const sim = await useSimulator({ clock, faults: { latencyMs: 2000 } });
    let settled = false;
    const pending = call(sim, '/api/v1/ping').then((reply) => {
      settled = true;
      return reply;
    });
    await waitFor(() => sim.requests.length === 1);
    await clock.advance(1999);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(settled).toBe(false);
    await clock.advance(1);
    const reply = await pending;
    expect(reply.status).toBe(200);
  });

  it('delays slowRate of responses by slowMs on top of latency', async () => {
    const clock = new ManualClock(START);
    const sim = await useSimulator({ clock, faults: { slowRate: 1, slowMs: 10_000 } });
    let settled = false;
    const pending = call(sim, '/api/v1/ping').then(() => (settled = true));
    await waitFor(() => sim.requests.length === 1);
    await clock.advance(9_999);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(settled).toBe(false);
    await clock.advance(1);
    await pending;
    expect(settled).toBe(true);
  });

  it('closes promptly while a delayed response is pending', async () => {
    const clock = new ManualClock(START);
    const sim = await useSimulator({ clock, faults: { latencyMs: 60_000 } });
    const pending = call(sim, '/api/v1/ping');
    await waitFor(() => sim.requests.length === 1);
    await sim.close();
    await expect(pending).rejects.toThrow();
  });
});
