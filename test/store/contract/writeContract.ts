import { describe, expect, it } from 'vitest';
import { LeaseLostError, type WriteFence } from '../../../src/cluster/writeFence.js';
import type { ChangefeedStore } from '../../../src/store/changefeedStore.js';
import type { OpenEngine } from '../storeContract.suite.js';
import { connectedSinkA, entry, HOUR, ingest, T } from './storeFixtures.js';

type MethodsOf<O> = { [K in keyof O]: O[K] extends (...args: never[]) => unknown ? K : never }[keyof O] & string;
/** The facets of the contract (watchedLogs, outbox, ...): its members that are objects of methods. */
type Facet = Exclude<
  {
    [K in keyof ChangefeedStore]-?: ChangefeedStore[K] extends (...args: never[]) => unknown ? never : K;
  }[keyof ChangefeedStore],
  'tenant' | 'location' | 'isOpen' | 'health'
>;
/**
 * Every method of the contract, as `ingest` or `outbox.markDelivered`, derived from the interface:
 * a method added to ChangefeedStore (or a facet) is a key CONTRACT_CALLS must have, or the
 * typecheck fails. `close` ends the view rather than reading or writing records.
 */
export type ContractMethod =
  Exclude<MethodsOf<ChangefeedStore>, 'close'> | { [F in Facet]: `${F}.${MethodsOf<ChangefeedStore[F]>}` }[Facet];

/** What CONTRACT_CALLS calls a method with: the fixture writeFixture made. */
export interface WriteFixture {
  /** A pending delivery of sink `a`. */
  pendingSeq: number;
  /** The event of the dead delivery of sink `a`. */
  deadEventId: string;
}
type Call = (store: ChangefeedStore, fixture: WriteFixture) => Promise<unknown>;

/** One call of every method of the contract, each one a write (fenced, refused when read-only) or a read. */
export const CONTRACT_CALLS: Record<ContractMethod, { write: Call } | { read: Call }> = {
  ingest: { write: (s) => ingest(s, [entry('e-3')], { windowEnd: T + 9 }) },
  getMeta: { read: (s) => s.getMeta('k') },
  setMeta: { write: (s) => s.setMeta('k', 'v2') },
  deferState: {
    write: async (s) => {
      s.deferState({ meta: { k: 'v3' } });
      await s.flushDeferred();
    },
  },
  flushDeferred: {
    write: async (s) => {
      s.deferState({ meta: { deferred: 'v' } });
      await s.flushDeferred();
    },
  },
  journalSize: { read: (s) => s.journalSize() },
  'watchedLogs.get': { read: (s) => s.watchedLogs.get('career', 'c-1') },
  'watchedLogs.list': { read: (s) => s.watchedLogs.list() },
  'watchedLogs.coverage': { read: (s) => s.watchedLogs.coverage() },
  'watchedLogs.registerAll': {
    write: (s) =>
      s.watchedLogs.registerAll([
        { log: 'skill', objectId: 's-2', origin: 'discovered', coverageStart: T, now: T },
        { log: 'career', objectId: 'c-2', origin: 'discovered', coverageStart: T, now: T },
      ]),
  },
  'watchedLogs.recordFailure': { write: (s) => s.watchedLogs.recordFailure('career', 'c-1', 'x', T) },
  'watchedLogs.setStatus': { write: (s) => s.watchedLogs.setStatus('career', 'c-1', 'gone', 'x') },
  'watchedLogs.setSortOrder': { write: (s) => s.watchedLogs.setSortOrder('career', 'c-1', 'oldest-first') },
  'seen.seenAmong': { read: (s) => s.seen.seenAmong('career', 'c-1', ['e-1', 'e-3']) },
  'outbox.pending': { read: (s) => s.outbox.pending('a', 0, 10) },
  'outbox.payloads': { read: (s, f) => s.outbox.payloads([f.pendingSeq]) },
  'outbox.markDelivered': { write: (s, f) => s.outbox.markDelivered('a', [f.pendingSeq], T) },
  'outbox.scheduleRetry': {
    write: (s, f) => s.outbox.scheduleRetry('a', [{ seq: f.pendingSeq, error: 'x', nextAttemptAt: T }], T),
  },
  'outbox.markDead': { write: (s, f) => s.outbox.markDead('a', [{ seq: f.pendingSeq, error: 'x' }], T) },
  'outbox.markFiltered': { write: (s, f) => s.outbox.markFiltered('a', [f.pendingSeq], T) },
  'outbox.enqueueFromJournal': { write: (s) => s.outbox.enqueueFromJournal('b', {}, T) },
  'outbox.countFromJournal': { read: (s) => s.outbox.countFromJournal({}) },
  'outbox.counts': { read: (s) => s.outbox.counts('a') },
  'outbox.prune': { write: (s) => s.outbox.prune(T + 1_000_000) },
  'deadLetters.list': { read: (s) => s.deadLetters.list() },
  'deadLetters.requeueSink': { write: (s) => s.deadLetters.requeueSink('a', T) },
  'deadLetters.requeueEvent': { write: (s, f) => s.deadLetters.requeueEvent(f.deadEventId, undefined, T) },
  'deadLetters.requeueCount': { read: (s) => s.deadLetters.requeueCount() },
  'journal.head': { read: (s) => s.journal.head() },
  'journal.prunedThrough': { read: (s) => s.journal.prunedThrough() },
  'journal.page': { read: (s) => s.journal.page(0, 10) },
  'sinks.activate': { write: (s) => s.sinks.activate([{ name: 'b', type: 'file' }], T) },
  'sinks.recordState': { write: (s) => s.sinks.recordState(connectedSinkA(T)) },
  'sinks.enable': { write: (s) => s.sinks.enable('a') },
  'sinks.list': { read: (s) => s.sinks.list() },
  'quarantine.count': { read: (s) => s.quarantine.count() },
  'quarantine.list': { read: (s) => s.quarantine.list() },
  'rates.list': { read: (s) => s.rates.list() },
};

const calls = Object.entries(CONTRACT_CALLS) as [ContractMethod, { write: Call } | { read: Call }][];
export const WRITES = calls.flatMap(([method, call]) => ('write' in call ? [[method, call.write] as const] : []));
const READS = calls.flatMap(([method, call]) => ('read' in call ? [[method, call.read] as const] : []));

/**
 * Sink `a` active and c-1 watched, two events (one pending for `a`, one dead), a meta value: every
 * write of CONTRACT_CALLS then has something to change.
 */
export async function writeFixture(store: ChangefeedStore): Promise<WriteFixture> {
  await store.sinks.activate([{ name: 'a', type: 'file' }], T);
  await store.watchedLogs.registerAll([
    { log: 'career', objectId: 'c-1', origin: 'config', coverageStart: T - HOUR, now: T },
  ]);
  await ingest(store, [entry('e-1'), entry('e-2')]);
  const [pendingSeq, deadSeq] = (await store.outbox.pending('a', 0, 10)).map((d) => d.seq) as [number, number];
  await store.outbox.markDead('a', [{ seq: deadSeq, error: 'x' }], T);
  await store.setMeta('k', 'v1');
  return { pendingSeq, deadEventId: (await store.deadLetters.list())[0]!.eventId };
}

/** What every read of the contract answers: equal before and after means no write kept anything. */
async function readAll(store: ChangefeedStore, fixture: WriteFixture): Promise<Record<string, unknown>> {
  const answers: Record<string, unknown> = {};
  for (const [method, read] of READS) answers[method] = await read(store, fixture);
  return answers;
}

/** Each write's outcome: its error, or the method's name when it went through. */
function outcomesOf(store: ChangefeedStore, fixture: WriteFixture): Promise<unknown[]> {
  return Promise.all(
    WRITES.map(([method, write]) =>
      write(store, fixture).then(
        () => method,
        (error: unknown) => error,
      ),
    ),
  );
}

/** The open options and the fences of the contract (storeBackend.ts), for every method of it. */
export function defineWriteContract(openEngine: OpenEngine): void {
  describe('writes', () => {
    it('refuses every write of a store opened read-only, and keeps nothing of them', async () => {
      const engine = openEngine();
      const writer = await engine.openStore();
      const fixture = await writeFixture(writer);
      const before = await readAll(writer, fixture);

      const reader = await engine.openStore({ readonly: true, mustExist: true });
      expect(await readAll(reader, fixture)).toEqual(before);
      const outcomes = await outcomesOf(reader, fixture);
      expect(outcomes.filter((outcome) => !(outcome instanceof Error))).toEqual([]);
      expect(await readAll(writer, fixture)).toEqual(before);
    });

    it('opens nothing that no daemon created when the store must exist, and creates nothing', async () => {
      const engine = openEngine();
      const missing = { code: 'STORE_MISSING' };
      await expect(engine.openStore({ mustExist: true })).rejects.toMatchObject(missing);
      await expect(engine.openStore({ readonly: true, mustExist: true })).rejects.toMatchObject(missing);
      // Still nothing there: the refusals created no file, no schema.
      await expect(engine.openStore({ readonly: true, mustExist: true })).rejects.toMatchObject(missing);

      await writeFixture(await engine.openStore());
      expect(await (await engine.openStore({ mustExist: true })).getMeta('k')).toBe('v1');
    });

    it('checks the fence in every write on a store shared by replicas, and keeps nothing once it refuses', async () => {
      const engine = openEngine();
      const backend = await engine.open();
      let armed = false;
      let checks = 0;
      const fence: WriteFence = {
        statementTimeoutMs: 10_000,
        check: async (client, begin) => {
          checks++;
          await client.query(begin);
          if (armed) throw new LeaseLostError('acme', 'the test took it');
        },
      };
      if (!backend.sharedByReplicas) {
        // One process writes it: a fence would never be checked, so it is refused.
        await expect(backend.tenantStore('acme', { fence })).rejects.toMatchObject({ code: 'STORE_ERROR' });
        return;
      }
      const store = await backend.tenantStore('acme', { fence });
      const fixture = await writeFixture(store);
      const before = await readAll(store, fixture);

      armed = true;
      checks = 0;
      const outcomes = await outcomesOf(store, fixture);
      expect(outcomes.map((outcome) => (outcome as { code?: unknown }).code)).toEqual(WRITES.map(() => 'LEASE_LOST'));
      expect(checks).toBe(WRITES.length);
      expect(await readAll(store, fixture)).toEqual(before);
      expect(store.health.problem).toBeUndefined();
    });
  });
}
