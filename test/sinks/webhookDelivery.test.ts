import { CloudEvent } from 'cloudevents';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import type { ReceivedWebhook } from '../../src/receiver/webhookReceiver.js';
import { receiver, ROTATED_SECRET, SECRET, storeWithEvents, webhookEngine } from '../support/webhookHarness.js';

const seqOf = (r: ReceivedWebhook): number =>
  (JSON.parse(r.body) as { data: { id: string } }).data.id.split('_').map(Number)[2] as number;
const objectOf = (r: ReceivedWebhook): string => String((JSON.parse(r.body) as { subject: string }).subject);

describe('webhook sink, fault-free', () => {
  it('delivers every event exactly once, signed, in order per object, at concurrency 8', async () => {
    const hook = await receiver();
    const { store } = await storeWithEvents(400, 20);
    const engine = webhookEngine({ store, url: hook.url, clock: systemClock, sink: { delivery: { maxInFlight: 8 } } });
    const [report] = await engine.drain(Date.now() + 30_000);
    await engine.stop();
    expect(report?.drained).toBe(true);
    expect(hook.received).toHaveLength(400);
    expect(hook.received.every((r) => r.verified)).toBe(true);
    const ids = hook.received.map((r) => r.id);
    expect(new Set(ids).size).toBe(400);
    for (const r of hook.received) {
      const event = new CloudEvent(JSON.parse(r.body) as Record<string, unknown>);
      expect(event.validate()).toBe(true);
      expect(r.id).toBe(event.id);
      expect(r.headers['content-type']).toBe('application/cloudevents+json');
      expect(Math.abs(Number(r.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
    }
    const lastByObject = new Map<string, number>();
    for (const r of hook.received) {
      const previous = lastByObject.get(objectOf(r)) ?? -1;
      expect(seqOf(r)).toBe(previous + 1);
      lastByObject.set(objectOf(r), seqOf(r));
    }
    // Several objects were in flight at once: concurrency was used.
    const firstTwenty = new Set(hook.received.slice(0, 20).map(objectOf));
    expect(firstTwenty.size).toBeGreaterThan(4);
    await store.close();
  });

  it('signs with every secret during a rotation, and a receiver knowing only the new one verifies', async () => {
    const hook = await receiver({ secrets: [ROTATED_SECRET] });
    const { store } = await storeWithEvents(5, 1);
    const engine = webhookEngine({
      store,
      url: hook.url,
      clock: systemClock,
      sink: { secret: undefined, secrets: [SECRET, ROTATED_SECRET] },
    });
    await engine.drain(Date.now() + 10_000);
    await engine.stop();
    expect(hook.received).toHaveLength(5);
    expect(hook.received.every((r) => r.verified)).toBe(true);
    expect(String(hook.received[0]?.headers['webhook-signature']).split(' ')).toHaveLength(2);
    await store.close();
  });

  it('sends binary mode: ce-* headers, the entry as the body, the signature over that body', async () => {
    const hook = await receiver();
    const { store } = await storeWithEvents(3, 1, 'globex');
    const engine = webhookEngine({
      store,
      url: hook.url,
      clock: systemClock,
      sink: { mode: 'binary', headers: { 'x-team': 'integrations' } },
    });
    await engine.drain(Date.now() + 10_000);
    await engine.stop();
    expect(hook.received).toHaveLength(3);
    const first = hook.received[0]!;
    expect(first.verified).toBe(true);
    expect(first.headers['ce-specversion']).toBe('1.0');
    expect(first.headers['ce-id']).toBe(first.id);
    expect(first.headers['ce-type']).toBe('com.skills.changefeed.career.level_added');
    expect(first.headers['ce-subject']).toBe('car_0');
    expect(first.headers['ce-tenant']).toBe('globex');
    expect(first.headers['x-team']).toBe('integrations');
    expect(JSON.parse(first.body)).toMatchObject({ id: 'act_0_0', event: 'level_added' });
    await store.close();
  });

  it('delivers only what the sink filter lets through and settles the rest as filtered', async () => {
    const hook = await receiver();
    const { store } = await storeWithEvents(10, 2);
    const engine = webhookEngine({
      store,
      url: hook.url,
      clock: systemClock,
      sink: { filter: { include: ['career.*'], exclude: ['career.level_removed'] } },
    });
    await engine.drain(Date.now() + 10_000);
    expect(hook.received).toHaveLength(10);
    await engine.stop();
    const onlySkills = webhookEngine({
      store,
      url: hook.url,
      clock: systemClock,
      sink: { name: 'hook', filter: { logs: ['skill'] } },
    });
    store.db.prepare("UPDATE deliveries SET state = 'pending'").run();
    await onlySkills.drain(Date.now() + 10_000);
    await onlySkills.stop();
    expect(hook.received).toHaveLength(10);
    expect(await store.outbox.counts('hook')).toMatchObject({ pending: 0, filtered: 10 });
    await store.close();
  });
});
