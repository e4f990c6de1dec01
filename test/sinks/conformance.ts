/**
 * The conformance suite every sink passes, each against its real destination. A sink's test file
 * calls `runSinkConformance(target)`; the target says how to configure the sink, how to read back
 * what it wrote with a real consumer, and which cases apply to it.
 *
 * Brokers sit behind a TCP proxy (test/support/tcpProxy.ts) so the suite can cut connections
 * mid-batch and take the broker "down" at start without restarting the broker itself.
 */
import type { SqliteChangefeedStore } from '../../src/store/sqlite/sqliteStore.js';
import { CloudEvent } from 'cloudevents';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { DeliveryEngine } from '../../src/deliver/deliveryEngine.js';
import { noopLogger } from '../support/noopLogger.js';
import { buildCloudEvent, eventsConfigSchema } from '../../src/events/cloudEvent.js';
import type { OutboundEvent } from '../../src/sinkContract/sink.js';
import { SinkUnavailableError } from '../../src/sinkContract/sinkErrors.js';
import { createSink, sinkConfigSchema, type SinkContext } from '../../src/sinks/sinkRegistry.js';
import { until } from '../support/daemonProcess.js';
import { prefilledStore } from '../support/prefilledStore.js';
import { rejection } from '../support/rejection.js';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy.js';
import { makeTempDir } from '../support/tempDir.js';

/** One message as a real consumer of the destination read it. */
export interface ReadMessage {
  /** The event id the message carries (message id, header or body). */
  id: string;
  /** The CloudEvent JSON as written. */
  body: string;
  /** Transport headers/properties, stringified, for the secret check. */
  headers: Record<string, string>;
}

export interface ConformanceReader {
  /** Resolves with everything read so far once at least `count` messages arrived, or at the timeout. */
  waitFor(count: number, timeoutMs: number): Promise<ReadMessage[]>;
  close(): Promise<void>;
}

export interface ConformanceTarget {
  /** Sink type under test, e.g. `nats`. */
  type: string;
  /** How the suite is named when the type alone does not say it, e.g. `nats over TLS`. */
  label?: string;
  /**
   * Port of the real destination on 127.0.0.1, fronted by a proxy in the tests; undefined when the
   * sink has no network destination. Read at each test's setup, so it may be set in `unavailable`.
   */
  brokerPort?: number;
  /** Whether the sink holds a connection it can report as lost (brokers), rather than one request per write. */
  connectionOriented?: boolean;
  /** Where stdout-like sinks write. */
  sinkContext?: SinkContext;
  /** Why the destination cannot be used here, or undefined when it can. Checked once. */
  unavailable(): Promise<string | undefined>;
  /** Raw config of a sink writing to a destination unique to `tag`, reaching the broker at `port`. */
  sinkConfig(args: { name: string; tag: string; port: number }): Record<string, unknown>;
  /** A real consumer of that destination, started before delivery; `port` is the broker's own. */
  openReader(args: { tag: string; port: number }): Promise<ConformanceReader>;
  /**
   * The header, property or field that carries the event's tenant besides the body, as the
   * reader reports it in `headers`; undefined when the sink sends the body alone.
   */
  tenantHeader?: string;
  /** Values that must appear in no message (credentials in the config). */
  secrets?: string[];
  cases: { readBack: boolean; orderedReadBack: boolean; dropConnections: boolean; downAtStart: boolean };
  /**
   * The sink's own settings that bound connecting and waiting for acknowledgements, all set to
   * `ms`: for the cases of a broker that accepts the connection and then goes silent. Absent for
   * sinks without a connection to a broker.
   */
  timeouts?: (ms: number) => Record<string, unknown>;
  /** Removes what the test created (stream, exchange, key). */
  cleanup?(tag: string): Promise<void>;
}

const FAST_RETRY = { initialDelayMs: 50, maxDelayMs: 500, maxAttempts: 0, maxAgeSeconds: 0 };
/** A dropped connection fails several writes at once; the default 30 s cool-down would only slow the suite. */
const FAST_CIRCUIT = { failureThreshold: 5, cooldownMs: 300, maxCooldownMs: 1_000 };
/** Svix's schedule pauses an endpoint failing as a whole (a webhook's cut connection) 5 s first. */
const FAST_ENDPOINT_BACKOFF = { scheduleMs: [100, 300] };
let tagCounter = 0;
const newTag = (): string => `cf${process.pid}x${Date.now().toString(36)}x${tagCounter++}`;
/** The tenant whose store the suite fills: not `default`, so a sink cannot pass by assuming it. */
const TENANT = 'acme-corp';

/** One event to write by hand, outside the delivery engine. */
export function conformanceEvent(): OutboundEvent {
  const entry = {
    id: 'act_conformance',
    event: 'level_added',
    description: 'Level added',
    performedAt: '2026-01-01T00:00:00Z',
  };
  const ce = buildCloudEvent(
    { tenant: 'default', log: 'career', objectId: 'car_1', entry, baseUrl: 'https://skills.example' },
    eventsConfigSchema.parse({}),
  );
  return {
    seq: 1,
    tenant: 'default',
    id: ce.id,
    type: ce.type,
    log: 'career',
    objectId: 'car_1',
    orderingKey: 'career:car_1',
    json: JSON.stringify(ce),
    attempt: 1,
  };
}

/**
 * Reads until every expected id has arrived or the time is up. Re-sends after a dropped
 * connection are duplicates, so a count of messages alone could stop before the last id came.
 */
async function readUntilAll(
  reader: ConformanceReader,
  ids: readonly string[],
  timeoutMs: number,
): Promise<ReadMessage[]> {
  const deadline = Date.now() + timeoutMs;
  const wanted = new Set(ids);
  for (let count = ids.length; ;) {
    const read = await reader.waitFor(count, Math.max(0, deadline - Date.now()));
    const seen = new Set(read.map((m) => m.id));
    if ([...wanted].every((id) => seen.has(id)) || Date.now() >= deadline) return read;
    count = read.length + 1;
  }
}

/** What the broker must give back: ids and per-object order of the events in a pre-filled store. */
function expectedEvents(store: SqliteChangefeedStore): { id: string; subject: string; index: number }[] {
  return (
    store.db.prepare('SELECT event_id AS id, object_id AS subject FROM events ORDER BY seq').all() as {
      id: string;
      subject: string;
    }[]
  ).map((e, i) => ({ ...e, index: i }));
}

export function runSinkConformance(target: ConformanceTarget): void {
  const label = target.label ?? target.type;
  describe(`${label} sink conformance`, () => {
    let skipReason: string | undefined;
    const cleanups: (() => Promise<void>)[] = [];

    beforeAll(async () => {
      skipReason = await target.unavailable();
      if (skipReason && process.env.CI)
        throw new Error(`${label}: ${skipReason} (CI is set: broker tests must not be skipped)`);
      if (skipReason) console.warn(`skipping ${label} conformance: ${skipReason}`);
    });
    afterEach(async () => {
      for (const c of cleanups.splice(0).reverse()) await c();
    });

    const setup = async (
      count: number,
      objects: number,
      options: { maxInFlight?: number; batchSize?: number; proxyDown?: boolean } = {},
    ) => {
      const tag = newTag();
      let proxy: TcpProxy | undefined;
      if (target.brokerPort !== undefined) {
        proxy = await startTcpProxy(target.brokerPort);
        const p = proxy;
        cleanups.push(() => p.close());
        if (options.proxyDown) await proxy.stop();
      }
      // Cleanups run in reverse: the reader closes before its stream, exchange or key is removed.
      if (target.cleanup) cleanups.push(() => target.cleanup!(tag));
      const reader = await target.openReader({ tag, port: target.brokerPort ?? 0 });
      cleanups.push(() => reader.close());
      const raw = target.sinkConfig({ name: 'conformance', tag, port: proxy?.port ?? 0 });
      // The case's own settings win over the target's: the ordering case needs concurrency, the drop case small batches.
      const delivery = {
        retry: FAST_RETRY,
        circuitBreaker: FAST_CIRCUIT,
        endpointBackoff: FAST_ENDPOINT_BACKOFF,
        ...(raw.delivery as object | undefined),
        ...(options.maxInFlight ? { maxInFlight: options.maxInFlight } : {}),
        ...(options.batchSize ? { batchSize: options.batchSize } : {}),
      };
      const config = sinkConfigSchema.parse({ ...raw, delivery });
      const { store } = await prefilledStore(
        count,
        [{ name: 'conformance', type: target.type }],
        objects,
        makeTempDir(),
        TENANT,
      );
      cleanups.push(() => store.close());
      const engine = new DeliveryEngine([{ sink: createSink(config, target.sinkContext), delivery: config.delivery }], {
        store,
        clock: systemClock,
        logger: noopLogger,
      });
      cleanups.push(() => engine.stop());
      return { tag, proxy, reader, store, engine, expected: expectedEvents(store) };
    };

    it('connects and closes cleanly, and close is idempotent', async (ctx) => {
      if (skipReason) return ctx.skip();
      const tag = newTag();
      const sink = createSink(
        sinkConfigSchema.parse(target.sinkConfig({ name: 'conformance', tag, port: target.brokerPort ?? 0 })),
        target.sinkContext,
      );
      try {
        await sink.connect(new AbortController().signal);
        await sink.close();
        await sink.close();
      } finally {
        if (target.cleanup) await target.cleanup(tag);
      }
    });

    it('delivers a batch that a real consumer reads back intact, each carrying its event id and tenant', async (ctx) => {
      if (skipReason || !target.cases.readBack) return ctx.skip();
      const { reader, engine, expected } = await setup(300, 10);
      const [report] = await engine.drain(Date.now() + 20_000);
      expect(report?.drained).toBe(true);
      const read = await readUntilAll(
        reader,
        expected.map((e) => e.id),
        10_000,
      );
      expect(new Set(read.map((m) => m.id))).toEqual(new Set(expected.map((e) => e.id)));
      for (const m of read) {
        const event = new CloudEvent(JSON.parse(m.body) as Record<string, unknown>);
        expect(event.validate()).toBe(true);
        expect(event.id).toBe(m.id);
        expect(event.tenant).toBe(TENANT);
        if (target.tenantHeader) expect(m.headers[target.tenantHeader], target.tenantHeader).toBe(TENANT);
      }
      for (const secret of target.secrets ?? []) {
        for (const m of read) expect(`${m.body}${JSON.stringify(m.headers)}`).not.toContain(secret);
      }
    });

    it("preserves the order of each object's events", async (ctx) => {
      if (skipReason || !target.cases.orderedReadBack) return ctx.skip();
      const { reader, engine, expected } = await setup(400, 8, { maxInFlight: 4 });
      await engine.drain(Date.now() + 20_000);
      const read = await readUntilAll(
        reader,
        expected.map((e) => e.id),
        10_000,
      );
      const indexOf = new Map(expected.map((e) => [e.id, e]));
      const lastIndex = new Map<string, number>();
      for (const m of read) {
        const e = indexOf.get(m.id)!;
        expect(e.index, `event ${e.index} of ${e.subject} arrived after ${lastIndex.get(e.subject)}`).toBeGreaterThan(
          lastIndex.get(e.subject) ?? -1,
        );
        lastIndex.set(e.subject, e.index);
      }
    });

    it('delivers every event at least once when connections drop mid-batch', async (ctx) => {
      if (skipReason || !target.cases.dropConnections) return ctx.skip();
      // Small batches: a fast broker must still be mid-stream when the connections are cut.
      const { reader, engine, proxy, expected } = await setup(3_000, 30, { batchSize: 50 });
      engine.start();
      await reader.waitFor(300, 10_000);
      proxy!.dropConnections();
      await reader.waitFor(1_500, 15_000);
      proxy!.dropConnections();
      const read = await readUntilAll(
        reader,
        expected.map((e) => e.id),
        30_000,
      );
      const ids = new Set(read.map((m) => m.id));
      expect(expected.filter((e) => !ids.has(e.id))).toEqual([]);
      expect(proxy!.accepted).toBeGreaterThanOrEqual(2);
    });

    // Only for sinks that hold a connection to a broker: the others have nothing to go silent.
    // A target with a listener of its own (TLS) learns its port only when started: read it then.
    const timeouts = target.timeouts;
    if (timeouts && target.brokerPort !== undefined) {
      /** A sink reaching the broker through a proxy the test can freeze, with every timeout at `timeoutMs`. */
      const silentBrokerSink = async (timeoutMs: number) => {
        const tag = newTag();
        const proxy = await startTcpProxy(target.brokerPort!);
        cleanups.push(() => proxy.close());
        if (target.cleanup) cleanups.push(() => target.cleanup!(tag));
        const sink = createSink(
          sinkConfigSchema.parse({
            ...target.sinkConfig({ name: 'conformance', tag, port: proxy.port }),
            ...timeouts(timeoutMs),
          }),
          target.sinkContext,
        );
        cleanups.push(() => sink.close());
        return { proxy, sink };
      };

      it('gives up connecting to a broker that accepts the connection but never answers', async (ctx) => {
        if (skipReason) return ctx.skip();
        const { proxy, sink } = await silentBrokerSink(300);
        proxy.freeze();
        // How long after the 300 ms is up to the machine; a sink that never gives up times the test out.
        const { error } = await rejection(sink.connect(new AbortController().signal));
        expect(error).toBeInstanceOf(SinkUnavailableError);
      });

      it('stops waiting for acknowledgements at once when a write is aborted', async (ctx) => {
        if (skipReason) return ctx.skip();
        // Timeouts twice the test's: only the abort can end the write before the test times out.
        const { proxy, sink } = await silentBrokerSink(120_000);
        await sink.connect(new AbortController().signal);
        proxy.freeze();
        const abort = new AbortController();
        const write = rejection(sink.write([conformanceEvent()], abort.signal));
        // Aborted once the write is on the wire, waiting for an acknowledgement that cannot come.
        await until(() => proxy.swallowed > 0, 30_000, 'the write to reach the frozen proxy');
        abort.abort(new Error('shutting down'));
        // The contract asks only that the write stop waiting and reject: what it throws after its
        // signal aborted is ignored, and the events stay pending.
        const { error } = await write;
        expect(error.message).not.toBe('expected a rejection');
      });
    }

    it('keeps events pending while the broker is down at start and delivers them when it comes up', async (ctx) => {
      if (skipReason || !target.cases.downAtStart) return ctx.skip();
      const { reader, engine, proxy, store, expected } = await setup(200, 5, { proxyDown: true });
      engine.start();
      // Until the engine met the closed port: nothing may be lost or marked delivered by then.
      await until(async () => Boolean((await store.sinks.list())[0]?.lastError), 15_000, 'the first failed write');
      expect((await store.outbox.counts('conformance')).pending).toBe(200);
      if (target.connectionOriented) expect((await store.sinks.list())[0]).toMatchObject({ connected: false });
      await proxy!.start();
      const read = await readUntilAll(
        reader,
        expected.map((e) => e.id),
        30_000,
      );
      expect(new Set(read.map((m) => m.id))).toEqual(new Set(expected.map((e) => e.id)));
    });
  });
}
