import { type Clock } from '../../src/clock.js';
import { ManualClock } from '../support/manualClock.js';
import { buildCloudEvent, type EventsConfig } from '../../src/events/cloudEvent.js';
import type { LogKind } from '../../src/logs.js';
import { deliverySchema, RETRY_DEFAULTS, type SinkDeliveryConfig } from '../../src/sinkContract/deliveryConfig.js';
import type { OutboundEvent, Sink } from '../../src/sinkContract/sink.js';
import { SinkPartialFailureError } from '../../src/sinkContract/sinkErrors.js';
import type { SqliteChangefeedStore } from '../../src/store/sqlite/sqliteStore.js';
import { openSqliteStoreFile } from '../support/sqliteStoreFile.js';

/** Decides the fate of one write: return to accept the batch, throw a sink error to fail it. */
export type WriteScript = (batch: readonly OutboundEvent[], writeIndex: number) => void | Promise<void>;

/** A sink's delivery block for a worker under test: no circuit breaking, no poison search, one write at a time, unless `over` says. */
export function testDelivery(over: Partial<SinkDeliveryConfig>): SinkDeliveryConfig {
  return deliverySchema(RETRY_DEFAULTS).parse({
    circuitBreaker: { failureThreshold: 0, cooldownMs: 1_000, maxCooldownMs: 1_000 },
    poison: { strikes: 0 },
    maxInFlight: 1,
    ...over,
  });
}

/**
 * A Sink that accepts in memory what `script` lets through. It records every batch it was handed,
 * failed or not, and every connect, so tests can see exactly what a destination would have seen.
 */
export class ScriptedSink implements Sink {
  readonly type = 'scripted';
  readonly limits = { maxBatchSize: 100, maxInFlight: 4 };
  /** Every batch handed to write, including the ones that failed. */
  readonly batches: (readonly OutboundEvent[])[] = [];
  /** When each batch was handed over, by the clock given (if any). */
  readonly writeTimes: number[] = [];
  /** Ids of the events the destination holds, in the order it received them (re-sent ones again). */
  readonly accepted: string[] = [];
  connects = 0;
  closed = false;
  /** Real milliseconds each write takes; above 0, several writes can be in flight at once. */
  latencyMs = 0;
  /** Ordering keys that were handed over while a write holding the same key was still open. */
  readonly overlappingKeys: string[] = [];
  maxConcurrentWrites = 0;
  private concurrentWrites = 0;
  private readonly openKeys = new Set<string>();

  constructor(
    readonly name: string,
    /** Decides each write; tests may replace it once they know the event ids. */
    public script: WriteScript = () => undefined,
    private readonly clock?: Clock,
  ) {}

  /** Every batch handed to write, as event ids. */
  get writes(): string[][] {
    return this.batches.map((b) => b.map((e) => e.id));
  }

  connect(): Promise<void> {
    this.connects++;
    return Promise.resolve();
  }

  write(batch: readonly OutboundEvent[], signal?: AbortSignal): Promise<void> {
    const index = this.batches.length;
    // Like a real sink's client (undici, a broker library), listen on the signal while the write is open.
    const onAbort = (): void => undefined;
    signal?.addEventListener('abort', onAbort, { once: true });
    this.batches.push(batch);
    if (this.clock) this.writeTimes.push(this.clock.now());
    const keys = [...new Set(batch.map((e) => e.orderingKey))];
    for (const key of keys) {
      if (this.openKeys.has(key)) this.overlappingKeys.push(key);
      this.openKeys.add(key);
    }
    this.maxConcurrentWrites = Math.max(this.maxConcurrentWrites, ++this.concurrentWrites);
    return new Promise<void>((resolve, reject) => {
      const answer = async (): Promise<void> => {
        signal?.removeEventListener('abort', onAbort);
        this.concurrentWrites--;
        for (const key of keys) this.openKeys.delete(key);
        try {
          await this.script(batch, index);
        } catch (error) {
          // A partial failure means the destination did write the events it does not name.
          if (error instanceof SinkPartialFailureError)
            this.accepted.push(...batch.map((e) => e.id).filter((id) => !error.failures.has(id)));
          reject(error instanceof Error ? error : new Error(String(error)));
          return;
        }
        this.accepted.push(...batch.map((e) => e.id));
        resolve();
      };
      if (this.latencyMs > 0) setTimeout(() => void answer(), this.latencyMs);
      else void answer();
    });
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }
}

export const EVENTS: EventsConfig = { typePrefix: 'com.test', nullEventName: 'unspecified' };
export const BASE_URL = 'https://svc.example';
export const START = Date.UTC(2026, 2, 1, 9, 0, 0);

export function testClock(): ManualClock {
  return new ManualClock(START);
}

/** A store in `file` whose sinks are active before anything is ingested. */
export async function openStore(file: string, sinks: readonly string[], now = START): Promise<SqliteChangefeedStore> {
  const store = openSqliteStoreFile(file);
  await store.sinks.activate(
    sinks.map((name) => ({ name, type: 'scripted' })),
    now,
  );
  return store;
}

/**
 * Ingests one read of an object's log (through the real ingest transaction) and returns the event
 * ids in ingestion order. Calls for several objects interleave their events by seq as called.
 */
export async function ingestEntries(
  store: SqliteChangefeedStore,
  log: LogKind,
  objectId: string,
  entryIds: readonly string[],
  now = START,
): Promise<string[]> {
  const built = entryIds.map((id, i) =>
    buildCloudEvent(
      {
        tenant: 'default',
        log,
        objectId,
        baseUrl: BASE_URL,
        entry: { id, event: 'level_added', performedAt: new Date(now - 60_000 + i).toISOString() },
      },
      EVENTS,
    ),
  );
  const byEntry = new Map(built.map((e) => [e.entryid, e]));
  await store.ingest({
    log,
    objectId,
    entries: built.map((e) => e.data),
    windowEnd: now,
    now,
    toEvent: (entry) => byEntry.get(entry.id)!,
  });
  return built.map((e) => e.id);
}
