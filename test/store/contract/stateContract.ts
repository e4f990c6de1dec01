import { describe, expect, it } from 'vitest';
import { entry, entryIdsInJournal, HOUR, ingest, pendingEntryIds, T, type OpenFresh } from './storeFixtures.js';

/** Watched logs, sink state, learned rates, named values, and all of it across a reopen. */
export function defineStateContract(openFresh: OpenFresh): void {
  describe('watched logs', () => {
    it('keeps the first-poll deadline set when a log is first watched: registering it again never pushes it back', async () => {
      const underTest = await openFresh();
      const store = underTest.store;
      const first = { log: 'career', objectId: 'c-9', origin: 'config', coverageStart: T } as const;
      expect(await store.watchedLogs.registerAll([{ ...first, now: T, firstPollBy: T + 60_000 }])).toBe(1);
      // A restart 50 s later registers the configured log again with its own deadline.
      expect(await store.watchedLogs.registerAll([{ ...first, now: T + 50_000, firstPollBy: T + 110_000 }])).toBe(0);
      expect(await store.watchedLogs.get('career', 'c-9')).toMatchObject({ createdAt: T, firstPollBy: T + 60_000 });
      const reopened = await underTest.reopen();
      expect((await reopened.watchedLogs.list()).find((w) => w.objectId === 'c-9')?.firstPollBy).toBe(T + 60_000);
    });

    it('registers a log once and keeps its cursor, failures, status and sort order', async () => {
      const { store } = await openFresh();
      expect(
        await store.watchedLogs.registerAll([
          { log: 'career', objectId: 'c-1', origin: 'discovered', coverageStart: T, now: T + 1 },
        ]),
      ).toBe(0);
      expect(
        await store.watchedLogs.registerAll([
          { log: 'skill', objectId: 's-1', origin: 'appeared', coverageStart: T, now: T },
        ]),
      ).toBe(1);
      expect(
        await store.watchedLogs.registerAll([
          { log: 'identity_provider', objectId: '', origin: 'config', coverageStart: T, now: T },
        ]),
      ).toBe(1);
      expect(await store.watchedLogs.get('career', 'c-1')).toEqual({
        log: 'career',
        objectId: 'c-1',
        origin: 'config',
        status: 'active',
        statusReason: null,
        coverageStart: T - HOUR,
        windowEnd: T - HOUR,
        sortOrder: null,
        lastPollAt: null,
        lastSuccessAt: null,
        lastError: null,
        consecutiveFailures: 0,
        nextPollAt: T,
        entriesIngested: 0,
        createdAt: T,
        firstPollBy: T,
      });
      // A skill log has no windows: its cursor starts empty.
      expect(await store.watchedLogs.get('skill', 's-1')).toMatchObject({ windowEnd: null, coverageStart: T });
      await store.watchedLogs.recordFailure('career', 'c-1', 'HTTP 500', T + 5);
      await store.watchedLogs.recordFailure('career', 'c-1', 'HTTP 502', T + 6);
      await store.watchedLogs.setStatus('skill', 's-1', 'gone', '404');
      await store.watchedLogs.setSortOrder('skill', 's-1', 'oldest-first');
      expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({
        lastPollAt: T + 6,
        lastError: 'HTTP 502',
        consecutiveFailures: 2,
      });
      expect(await store.watchedLogs.get('skill', 's-1')).toMatchObject({
        status: 'gone',
        statusReason: '404',
        sortOrder: 'oldest-first',
      });
      await ingest(store, [entry('e-1')], { windowEnd: T + 9, now: T + 10 });
      expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({
        windowEnd: T + 9,
        lastError: null,
        consecutiveFailures: 0,
        lastSuccessAt: T + 10,
      });
      expect((await store.watchedLogs.list()).map((w) => [w.log, w.objectId])).toEqual([
        ['career', 'c-1'],
        ['identity_provider', ''],
        ['skill', 's-1'],
      ]);
      expect(await store.watchedLogs.get('career', 'missing')).toBeUndefined();
    });

    it('registers a list of logs in one call, counting the new ones and keeping those already watched', async () => {
      const { store } = await openFresh();
      const found = (objectId: string, log: 'career' | 'skill' = 'career') =>
        ({ log, objectId, origin: 'appeared', coverageStart: T + 5, now: T + 7, firstPollBy: T + 60_000 }) as const;
      expect(await store.watchedLogs.registerAll([])).toBe(0);
      expect(await store.watchedLogs.registerAll([found('c-1'), found('c-2'), found('s-2', 'skill')])).toBe(2);
      expect(await store.watchedLogs.registerAll([found('c-2'), found('c-3')])).toBe(1);
      // c-1 was watched before (storeFixtures): its origin and cursor stay.
      expect(await store.watchedLogs.get('career', 'c-1')).toMatchObject({ origin: 'config', windowEnd: T - HOUR });
      expect(await store.watchedLogs.get('career', 'c-2')).toEqual({
        log: 'career',
        objectId: 'c-2',
        origin: 'appeared',
        status: 'active',
        statusReason: null,
        coverageStart: T + 5,
        windowEnd: T + 5,
        sortOrder: null,
        lastPollAt: null,
        lastSuccessAt: null,
        lastError: null,
        consecutiveFailures: 0,
        nextPollAt: T + 7,
        entriesIngested: 0,
        createdAt: T + 7,
        firstPollBy: T + 60_000,
      });
      expect(await store.watchedLogs.get('skill', 's-2')).toMatchObject({ windowEnd: null, coverageStart: T + 5 });
      expect((await store.watchedLogs.list()).map((w) => w.objectId)).toEqual(['c-1', 'c-2', 'c-3', 's-2']);
    });

    // Ids are opaque strings (spec): PostgreSQL's text cannot hold U+0000, and the list's one
    // statement failed as a whole, so every discovery of the tenant failed and no new log was watched.
    it('registers a list holding an id with a NUL character, and the rest of the list with it', async () => {
      const { store } = await openFresh();
      const found = (objectId: string) =>
        ({ log: 'skill', objectId, origin: 'appeared', coverageStart: T, now: T, firstPollBy: T }) as const;
      expect(await store.watchedLogs.registerAll([found('s-a'), found('s\u0000b'), found('s-c')])).toBe(3);
      expect(await store.watchedLogs.registerAll([found('s\u0000b'), found('s-d')])).toBe(1);
      const skills = (await store.watchedLogs.list()).filter((w) => w.log === 'skill').map((w) => w.objectId);
      expect(skills).toEqual(expect.arrayContaining(['s-a', 's-c', 's-d']));
      expect(skills).toHaveLength(4);
    });
  });

  describe('sink state, rates and meta', () => {
    it('records the state of each sink and keeps the last delivery time when none is given', async () => {
      const { store } = await openFresh(['a', 'b']);
      const listed = await store.sinks.list();
      expect(listed[0]).toEqual({
        name: 'a',
        type: 'file',
        active: true,
        registeredAt: T,
        connected: false,
        pausedUntil: 0,
        consecutiveFailures: 0,
        lastError: null,
        lastErrorAt: null,
        lastDeliveryAt: null,
        circuit: 'closed',
        disabledReason: null,
        failingSince: null,
      });
      const base = { sink: 'a', pausedUntil: 0, consecutiveFailures: 0, lastError: null, lastErrorAt: null };
      await store.sinks.recordState({ ...base, connected: true, lastDeliveryAt: T + 1 });
      await store.sinks.recordState({
        ...base,
        connected: false,
        pausedUntil: T + 60_000,
        consecutiveFailures: 3,
        lastError: 'refused',
        lastErrorAt: T + 2,
        lastDeliveryAt: null,
        circuit: 'open',
        disabledReason: 'gone',
      });
      expect((await store.sinks.list())[0]).toMatchObject({
        connected: false,
        pausedUntil: T + 60_000,
        consecutiveFailures: 3,
        lastError: 'refused',
        lastErrorAt: T + 2,
        lastDeliveryAt: T + 1,
        circuit: 'open',
        disabledReason: 'gone',
      });
      await store.sinks.recordState({ ...base, connected: true, lastDeliveryAt: null });
      expect((await store.sinks.list())[0]).toMatchObject({ connected: true, circuit: 'closed', disabledReason: null });
    });

    it('keeps a failure run and a disabled state until the sink is enabled again', async () => {
      const { store } = await openFresh(['a', 'b']);
      const failing = {
        sink: 'a',
        connected: false,
        pausedUntil: T + 5_000,
        consecutiveFailures: 4,
        lastError: 'HTTP 401',
        lastErrorAt: T + 3,
        lastDeliveryAt: null,
        circuit: 'open' as const,
      };
      await store.sinks.recordState({ ...failing, failingSince: T });
      expect((await store.sinks.list())[0]).toMatchObject({ failingSince: T, disabledReason: null });
      expect(await store.sinks.enable('a')).toBe(false);
      expect((await store.sinks.list())[0]).toMatchObject({ failingSince: null, consecutiveFailures: 0 });
      await store.sinks.recordState({ ...failing, failingSince: T, disabledReason: 'every attempt failed for 5 days' });
      expect((await store.sinks.list())[0]).toMatchObject({
        failingSince: T,
        disabledReason: 'every attempt failed for 5 days',
      });
      expect(await store.sinks.enable('a')).toBe(true);
      expect((await store.sinks.list())[0]).toMatchObject({
        failingSince: null,
        disabledReason: null,
        circuit: 'closed',
        pausedUntil: 0,
        consecutiveFailures: 0,
        lastError: 'HTTP 401',
      });
      expect(await store.sinks.enable('b')).toBe(false);
    });

    it('writes a guarded state only while the store holds the disabled state the writer last saw', async () => {
      const { store } = await openFresh(['a', 'b']);
      const disabled = {
        sink: 'a',
        connected: false,
        pausedUntil: 0,
        consecutiveFailures: 16,
        lastError: 'every attempt failed for 5 days',
        lastErrorAt: T,
        lastDeliveryAt: null,
        circuit: 'open' as const,
        disabledReason: 'every attempt failed for 5 days',
        failingSince: T,
      };
      expect(await store.sinks.recordState(disabled, { disabledReason: null })).toBe(true);
      expect(await store.sinks.enable('a')).toBe(true);
      // A worker that has not seen the enable yet, stopping: its stale state is not written.
      expect(await store.sinks.recordState(disabled, { disabledReason: disabled.disabledReason })).toBe(false);
      expect((await store.sinks.list())[0]).toMatchObject({ disabledReason: null, failingSince: null });
      // Having read the enable, it writes again.
      expect(await store.sinks.recordState({ ...disabled, disabledReason: null }, { disabledReason: null })).toBe(true);
      // No state recorded yet: nothing to undo.
      expect(await store.sinks.recordState({ ...disabled, sink: 'b' }, { disabledReason: 'x' })).toBe(true);
    });

    it('saves and lists learned rates, one row per log', async () => {
      const { store } = await openFresh();
      const row = {
        log: 'career' as const,
        objectId: 'c-1',
        events: 7.5,
        hours: 20.25,
        sessions: 3.125,
        lastEventAt: T - 1,
        updatedAt: T,
        pollCost: 1.5,
        plannedRate: 0.333,
        nextPollAt: T + 1_234.5,
      };
      store.deferState({
        rates: [row, { ...row, objectId: 'a-0', plannedRate: null, nextPollAt: null, lastEventAt: null }],
      });
      await store.flushDeferred();
      store.deferState({ rates: [{ ...row, events: 8 }] });
      await store.flushDeferred();
      expect(await store.rates.list()).toEqual([
        { ...row, objectId: 'a-0', plannedRate: null, nextPollAt: null, lastEventAt: null },
        { ...row, events: 8 },
      ]);
    });

    it('keeps named values', async () => {
      const { store } = await openFresh();
      expect(await store.getMeta('discovery.completedAt')).toBeUndefined();
      await store.setMeta('discovery.completedAt', '123');
      await store.setMeta('discovery.completedAt', '456');
      expect(await store.getMeta('discovery.completedAt')).toBe('456');
    });

    it('keeps everything across a reopen', async () => {
      const underTest = await openFresh();
      await ingest(underTest.store, [entry('e-1')]);
      await underTest.store.setMeta('discovery.completedAt', '123');
      const reopened = await underTest.reopen();
      expect(await entryIdsInJournal(reopened)).toEqual(['e-1']);
      expect(await reopened.getMeta('discovery.completedAt')).toBe('123');
      expect(await ingest(reopened, [entry('e-1')])).toMatchObject({ emitted: 0, duplicates: 1 });
      expect(await pendingEntryIds(reopened, 'a')).toEqual(['e-1']);
    });
  });
}
