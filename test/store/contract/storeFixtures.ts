import type { ActivityEntry } from '../../../src/api/activityEntry.js';
import type { QuarantinedEntry } from '../../../src/api/quarantinedEntry.js';
import { buildCloudEvent, type EventsConfig } from '../../../src/events/cloudEvent.js';
import type { LogKind } from '../../../src/logs.js';
import type { ChangefeedStore } from '../../../src/store/changefeedStore.js';
import type { IngestRequest, RateEstimateRow, SinkStateUpdate } from '../../../src/store/storeRecords.js';

/** Opens a fresh store with `sinks` active (default ['a']) and the career log c-1 watched. */
export type OpenFresh = (sinks?: string[]) => Promise<{
  store: ChangefeedStore;
  reopen(): Promise<ChangefeedStore>;
  /** The next event is numbered `positions` seqs after the head (see SkipJournalPositions). */
  skipJournalPositions: (positions: number) => Promise<void>;
  /** Every write of the re-queue count refused from now on (see RefuseRequeueCounts). */
  refuseRequeueCounts: () => Promise<void>;
}>;

export const T = Date.UTC(2026, 4, 1, 12, 0, 0);
export const HOUR = 3_600_000;

/** Sink `a` connected, without a failure, last delivering at `lastDeliveryAt`. */
export const connectedSinkA = (lastDeliveryAt: number | null): SinkStateUpdate => ({
  sink: 'a',
  connected: true,
  pausedUntil: 0,
  consecutiveFailures: 0,
  lastError: null,
  lastErrorAt: null,
  lastDeliveryAt,
});

/** A learned rate of the career log c-1 with `events` counted. */
export const rateOf = (events: number): RateEstimateRow => ({
  log: 'career',
  objectId: 'c-1',
  events,
  hours: 1,
  sessions: 1,
  lastEventAt: null,
  updatedAt: T,
  pollCost: 1,
  plannedRate: null,
  nextPollAt: null,
});
export const EVENTS: EventsConfig = { typePrefix: 'com.test', nullEventName: 'unspecified' };
export const BASE_URL = 'https://svc.example';

export const entry = (id: string, performedAt: number | null = T - 60_000, event = 'level_added'): ActivityEntry => ({
  id,
  event,
  performedAt: performedAt === null ? null : new Date(performedAt).toISOString(),
});

export function ingest(store: ChangefeedStore, entries: ActivityEntry[], over: Partial<IngestRequest> = {}) {
  const log: LogKind = over.log ?? 'career';
  const objectId = over.objectId ?? 'c-1';
  return store.ingest({
    log,
    objectId,
    entries,
    windowEnd: T,
    now: T,
    toEvent: (e) => buildCloudEvent({ tenant: store.tenant, log, objectId, entry: e, baseUrl: BASE_URL }, EVENTS),
    ...over,
  });
}

/** Sink `a` active and one log watched from `at` (configured), as a tenant starts. */
export async function watchOne(store: ChangefeedStore, log: LogKind, objectId: string, at: number): Promise<void> {
  await store.sinks.activate([{ name: 'a', type: 'file' }], at);
  await store.watchedLogs.registerAll([{ log, objectId, origin: 'config', coverageStart: at, now: at }]);
}

/** Entry ids of the whole journal, in journal order, read back from the stored CloudEvents. */
export async function entryIdsInJournal(store: ChangefeedStore): Promise<string[]> {
  const page = await store.journal.page(0, 100_000);
  return page.events.map((e) => (JSON.parse(e.payload) as { entryid: string }).entryid);
}

/** Entry ids of the pending deliveries of `sink`, in seq order, with their seqs. */
async function pendingBySink(store: ChangefeedStore, sink: string): Promise<{ ids: string[]; seqs: number[] }> {
  const seqs = (await store.outbox.pending(sink, 0, 1000)).map((d) => d.seq);
  const payloads = await store.outbox.payloads(seqs);
  return { ids: seqs.map((seq) => (JSON.parse(payloads.get(seq)!) as { entryid: string }).entryid), seqs };
}
export const pendingEntryIds = async (store: ChangefeedStore, sink: string) => (await pendingBySink(store, sink)).ids;

/** The seq of each entry id in the journal. */
export async function seqOf(store: ChangefeedStore): Promise<Record<string, number>> {
  const page = await store.journal.page(0, 100_000);
  return Object.fromEntries(
    page.events.map((e) => [(JSON.parse(e.payload) as { entryid: string }).entryid, e.seq] as const),
  );
}

export const isSeen = async (store: ChangefeedStore, id: string, log: LogKind = 'career', objectId = 'c-1') =>
  (await store.seen.seenAmong(log, objectId, [id])).has(id);

export const quarantined = (raw: string, entryId?: string): QuarantinedEntry => ({
  raw,
  rawBytes: Buffer.byteLength(raw),
  entryId,
  reason: 'performedAt does not parse',
  requestId: 'req-1',
});
