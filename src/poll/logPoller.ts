import type { Logger } from 'pino';
import { performedAtMs, type ActivityEntry } from '../api/activityEntry.js';
import { ApiResponseTooLargeError } from '../api/apiErrors.js';
import type { QuarantinedEntry } from '../api/quarantinedEntry.js';
import type { ServiceClient } from '../api/serviceClient.js';
import type { Clock } from '../clock.js';
import { buildCloudEvent, type EventsConfig } from '../events/cloudEvent.js';
import { LOGS, logKey } from '../logs.js';
import type { ChangefeedStore } from '../store/changefeedStore.js';
import type { IngestResult, SortOrder, WatchedLog } from '../store/storeRecords.js';
import { historyLookbackMs, probeHistory, versionLogHistory, type HistoryProbeResult } from './logHistory.js';
import { backfillProgress, type BackfillState } from './backfillProgress.js';
import { PageSizes } from './pageSize.js';
import { detectSortOrder, inIngestionOrder } from './sortOrder.js';
import type { ServerClock } from './serverClock.js';
import type { LogHistory } from '../schedule/rateState.js';
import { believableCursor, nextWindow, toIso, type TimeWindow } from './timeWindow.js';
import { SeenPages } from './seenPages.js';
import { readVersionLog } from './versionLogWalker.js';
import type { WatchConfig } from './watchConfig.js';
import { readWindowPage, walkWindow } from './windowWalker.js';

export interface PollResult {
  emitted: number;
  duplicates: number;
  requests: number;
  /** performedAt of every emitted entry, for detection-delay metrics and rate estimates. */
  emittedPerformedAt: number[];
  /** On a log's first poll: the changes it held before, for the rate estimate (not emitted). */
  history?: LogHistory;
  /**
   * The log as this poll's commits left it in the store (cursor, sort order, counts): the poll
   * loop's copy of its active logs takes it instead of reading the list again. Absent when the
   * poll committed nothing.
   */
  watched?: WatchedLog;
  /** Entries quarantined for the first time by this poll (not emitted; the cursor advanced). */
  quarantined?: number;
}

export interface LogPollerDeps {
  client: ServiceClient;
  store: ChangefeedStore;
  serverClock: ServerClock;
  clock: Clock;
  watch: WatchConfig;
  events: EventsConfig;
  baseUrl: string;
  logger: Logger;
}

/**
 * Polls one watched log once: reads what is new since its cursor and ingests it together with
 * the cursor advance. Throws the API's typed errors; the poll loop decides what they mean.
 */
export class LogPoller {
  private readonly sizes = new PageSizes();
  /** Backfill progress by log key; made at a tenant's first backfill (an empty Map holds about 220 bytes). */
  private backfills: Map<string, BackfillState> | undefined;
  private readonly seenPages = new SeenPages();

  constructor(private readonly deps: LogPollerDeps) {}

  async poll(watched: WatchedLog, signal?: AbortSignal): Promise<PollResult> {
    return LOGS[watched.log].windowed ? this.pollWindowed(watched, signal) : this.pollVersionLog(watched, signal);
  }

  private configuredOrder(watched: WatchedLog): SortOrder | undefined {
    const configured = this.deps.watch.sortOrder[watched.log];
    return configured === 'auto' ? undefined : configured;
  }

  private async pollWindowed(watched: WatchedLog, signal?: AbortSignal): Promise<PollResult> {
    const { store, serverClock, watch } = this.deps;
    const overlapMs = watch.overlapSeconds * 1000;
    const coverageStart = watched.coverageStart ?? watched.createdAt;
    const serverNow = serverClock.now();
    const stored = watched.windowEnd ?? coverageStart;
    const cursor = believableCursor(
      stored,
      serverNow,
      watched.lastSuccessAt === null ? undefined : serverClock.toServerTime(watched.lastSuccessAt),
    );
    if (cursor < stored) {
      this.deps.logger.warn(
        {
          log: watched.log,
          objectId: watched.objectId,
          cursor: new Date(stored).toISOString(),
          aheadSeconds: Math.round((stored - serverNow) / 1000),
        },
        "cursor is ahead of the service's clock; reading again from the last successful poll",
      );
    }
    const window = nextWindow({ windowEnd: cursor, coverageStart, overlapMs, serverNow });
    const result: PollResult = { emitted: 0, duplicates: 0, requests: 0, emittedPerformedAt: [] };
    if (!window) {
      // Nothing can be new yet. A log never read must still prove it exists (a configured id with
      // a typo must fail `run --once`): one entry of the overlap before the cursor, so nothing is
      // emitted.
      if (watched.lastSuccessAt === null) {
        const proof = { from: cursor - Math.max(overlapMs, 1000), to: cursor };
        await readWindowPage({ ...this.deps, log: watched.log, objectId: watched.objectId, signal }, proof, 0, 1);
        result.requests++;
      }
      return result;
    }
    // Quarantined entries of the pages read so far, stored with the next commit.
    const held: QuarantinedEntry[] = [];
    const priority = serverNow - window.from > backfillDistanceMs(watch) ? 'backfill' : undefined;
    let coveredUntil = cursor;
    const progress = (pages: number, entries: number): void =>
      this.observeProgress(watched, coveredUntil, pages, entries);
    // The sort order rides with the cursor when it is known by the commit (the first poll's probe
    // tells it): a log's first poll is then one write, not two.
    let recordedOrder: SortOrder | undefined;
    const commit = async (entries: ActivityEntry[], windowEnd: number): Promise<void> => {
      const ingestedAt = this.deps.clock.now();
      const order = watched.sortOrder ? undefined : (detectedOrder ?? detectSortOrder(entries));
      const ingested = await store.ingest({
        log: watched.log,
        objectId: watched.objectId,
        entries: inIngestionOrder(entries),
        quarantined: held.splice(0),
        windowEnd,
        // Windows never reach further back than one overlap; keep a second one as margin.
        pruneSeenBefore: windowEnd - 2 * overlapMs,
        sortOrder: order,
        toEvent: (entry) => this.toEvent(watched, entry),
        now: ingestedAt,
      });
      recordedOrder ??= order;
      result.watched = advanced(result.watched ?? watched, { windowEnd, now: ingestedAt, ingested, sortOrder: order });
      this.account(result, ingested, watched);
      coveredUntil = windowEnd;
      progress(0, 0);
    };
    const sortOrder = this.configuredOrder(watched) ?? watched.sortOrder ?? undefined;
    let detectedOrder = sortOrder;
    let firstWindowRead = false;
    // An object that appeared since the previous discovery has no history before its coverage.
    if (watched.lastSuccessAt === null && watched.origin !== 'appeared' && this.historyMs() > 0) {
      const probe = await this.probe(watched, window, priority, signal);
      result.requests++;
      result.history = probe.history;
      detectedOrder ??= probe.detectedOrder;
      if (probe.firstWindow) {
        await commit(probe.firstWindow, window.to);
        firstWindowRead = true;
      }
    }
    if (!firstWindowRead) {
      const stats = await walkWindow(
        {
          client: this.deps.client,
          log: watched.log,
          objectId: watched.objectId,
          sortOrder,
          signal,
          priority,
          sizes: this.sizes,
          commit,
          quarantine: (entries) => held.push(...entries),
          onPage: (entries) => progress(1, entries),
        },
        window,
      );
      result.requests += stats.requests;
      detectedOrder ??= stats.detectedOrder;
      if (stats.splits > 0) {
        this.deps.logger.info(
          { log: watched.log, objectId: watched.objectId, splits: stats.splits, requests: stats.requests },
          'dense window narrowed to stay within the offset cap',
        );
      }
    }
    if (detectedOrder && !watched.sortOrder && detectedOrder !== recordedOrder) {
      await store.watchedLogs.setSortOrder(watched.log, watched.objectId, detectedOrder);
      result.watched = { ...(result.watched ?? watched), sortOrder: detectedOrder };
    }
    return result;
  }

  /**
   * The first poll's look at the log's history. A page too large to read only costs the rate
   * estimate: the page size is lowered and the window walk reads the log in smaller pages.
   */
  private async probe(
    watched: WatchedLog,
    window: TimeWindow,
    priority: 'backfill' | undefined,
    signal: AbortSignal | undefined,
  ): Promise<HistoryProbeResult> {
    const key = logKey(watched);
    try {
      return await probeHistory({
        client: this.deps.client,
        log: watched.log,
        objectId: watched.objectId,
        window,
        historyMs: this.historyMs(),
        limit: this.sizes.limit(key),
        priority,
        signal,
      });
    } catch (error) {
      if (!(error instanceof ApiResponseTooLargeError)) throw error;
      this.sizes.record(key, { tooLarge: true });
      return { history: undefined, firstWindow: undefined, detectedOrder: undefined };
    }
  }

  /** Logs a backfilling log's progress now and then, and once when it has caught up. */
  private observeProgress(watched: WatchedLog, coveredUntil: number, pages: number, entries: number): void {
    const key = logKey(watched);
    const next = backfillProgress(
      this.backfills?.get(key),
      { now: this.deps.clock.now(), serviceNow: this.deps.serverClock.now(), coveredUntil, pages, entries },
      backfillDistanceMs(this.deps.watch),
    );
    if (next.state) (this.backfills ??= new Map()).set(key, next.state);
    else this.backfills?.delete(key);
    if (!next.line) return;
    const { kind, ...fields } = next.line;
    this.deps.logger.info(
      {
        log: watched.log,
        objectId: watched.objectId,
        ...fields,
        ...('coveredUntil' in fields && { coveredUntil: toIso(fields.coveredUntil) }),
      },
      kind === 'caughtUp' ? 'backfill caught up: the log is read to the present' : 'backfill in progress',
    );
  }

  private historyMs(): number {
    return historyLookbackMs(this.deps.watch.schedule);
  }

  private async pollVersionLog(watched: WatchedLog, signal?: AbortSignal): Promise<PollResult> {
    const { store, serverClock } = this.deps;
    // What the read covers: everything on the log when its first page was asked for.
    const readAt = serverClock.now();
    const seenPages = this.seenPages.read(logKey(watched), (ids) =>
      store.seen.seenAmong(watched.log, watched.objectId, ids),
    );
    const read = await readVersionLog({
      client: this.deps.client,
      objectId: watched.objectId,
      sortOrder: this.configuredOrder(watched) ?? watched.sortOrder ?? undefined,
      seenAmong: seenPages.seenAmong,
      sizes: this.sizes,
      // A window end in the service's future (a Date once believed ahead left it: believableCursor)
      // says nothing of what the last read read; the read ends only at a page with nothing new.
      settledBefore:
        watched.windowEnd === null || watched.windowEnd > readAt
          ? undefined
          : watched.windowEnd - this.deps.watch.overlapSeconds * 1000,
      signal,
    });
    // The first read of a version log is its baseline: what happened before coverage started is
    // recorded as seen but not emitted. Undated entries count as history unless a startFrom
    // timestamp asked for a backfill.
    const baseline = watched.windowEnd === null;
    const coverageStart = watched.coverageStart ?? watched.createdAt;
    const emitUndated = this.deps.watch.startFrom !== 'now';
    const emit: ActivityEntry[] = [];
    const silent: ActivityEntry[] = [];
    for (const entry of read.unseen) {
      const t = performedAtMs(entry);
      const isNew = !baseline || (t === null ? emitUndated : t >= coverageStart);
      (isNew ? emit : silent).push(entry);
    }
    const ingestedAt = this.deps.clock.now();
    const sortOrder = watched.sortOrder ? undefined : read.detectedOrder;
    const ingested = await store.ingest({
      log: watched.log,
      objectId: watched.objectId,
      entries: inIngestionOrder(emit),
      silentEntries: silent,
      quarantined: read.quarantined,
      windowEnd: readAt,
      sortOrder,
      toEvent: (entry) => this.toEvent(watched, entry),
      now: ingestedAt,
    });
    seenPages.committed();
    const result: PollResult = {
      emitted: 0,
      duplicates: 0,
      requests: read.requests,
      emittedPerformedAt: [],
      watched: advanced(watched, { windowEnd: readAt, now: ingestedAt, ingested, sortOrder }),
    };
    if (baseline && this.historyMs() > 0)
      result.history = versionLogHistory(read.unseen, serverClock.now(), this.historyMs());
    this.account(result, ingested, watched);
    return result;
  }

  private toEvent(watched: WatchedLog, entry: ActivityEntry) {
    return buildCloudEvent(
      {
        tenant: this.deps.store.tenant,
        log: watched.log,
        objectId: watched.objectId,
        entry,
        baseUrl: this.deps.baseUrl,
      },
      this.deps.events,
    );
  }

  private account(result: PollResult, ingested: IngestResult, watched: WatchedLog): void {
    if (ingested.quarantined > 0) {
      this.deps.logger.warn(
        { log: watched.log, objectId: watched.objectId, quarantined: ingested.quarantined },
        'entries that cannot become events were quarantined (not emitted; the log goes on): see ' +
          '`changefeed quarantine list`',
      );
    }
    result.emitted += ingested.emitted;
    result.duplicates += ingested.duplicates;
    result.emittedPerformedAt.push(...ingested.emittedPerformedAt);
    if (ingested.quarantined > 0) result.quarantined = (result.quarantined ?? 0) + ingested.quarantined;
  }
}

/**
 * `w` as an ingest's cursor statement leaves it (WatchedLogStore.advance, part of every ingest):
 * the window recorded, the poll a success, the events counted, a detected sort order kept.
 */
function advanced(
  w: WatchedLog,
  commit: { windowEnd: number; now: number; ingested: IngestResult; sortOrder: SortOrder | undefined },
): WatchedLog {
  return {
    ...w,
    windowEnd: commit.windowEnd,
    lastPollAt: commit.now,
    lastSuccessAt: commit.now,
    lastError: null,
    consecutiveFailures: 0,
    entriesIngested: w.entriesIngested + commit.ingested.emitted,
    sortOrder: commit.sortOrder ?? w.sortOrder,
  };
}

/**
 * How far behind the service's now a window must start to be a backfill: twice the longest
 * regular interval. Such a window reads history no regular poll would (a log watched from a past
 * timestamp, or catching up after downtime): its pages take only the read budget that regular
 * polls leave.
 */
function backfillDistanceMs(watch: Pick<WatchConfig, 'schedule'>): number {
  return 2 * watch.schedule.maxIntervalMinutes * 60_000;
}
