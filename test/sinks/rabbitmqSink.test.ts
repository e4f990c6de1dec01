/**
 * RabbitMQ-specific behaviour of the rabbitmq sink, against the real broker on 127.0.0.1:5672.
 *
 * A memory alarm cannot be raised safely on a shared broker, so the blocked-connection tests put a
 * small proxy between sink and broker that does what the broker does during an alarm: it sends a
 * real `connection.blocked` method frame (and later `connection.unblocked`) down the connection,
 * and stops passing the client's bytes on, the way RabbitMQ stops reading from a blocked
 * publisher. amqplib parses those frames itself, so the sink is tested through its real
 * connection and its real events, without any test-only hook in the sink.
 */
import { createServer, connect as connectTcp, type AddressInfo, type Socket } from 'node:net';
import { inspect } from 'node:util';
import { connect, type Channel, type ChannelModel, type ConsumeMessage, type Options } from 'amqplib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ActivityEntry } from '../../src/api/activityEntry.js';
import { describeError } from '../../src/errors.js';
import { buildCloudEvent, eventsConfigSchema } from '../../src/events/cloudEvent.js';
import type { LogKind } from '../../src/logs.js';
import { BLOCKED_RETRY_MS, RabbitmqSink } from '../../src/sinks/rabbitmqSink.js';
import { rabbitmqSinkConfigSchema } from '../../src/sinks/rabbitmqSinkConfig.js';
import type { OutboundEvent } from '../../src/sinkContract/sink.js';
import { SinkBackoffError, SinkPartialFailureError, SinkUnavailableError } from '../../src/sinkContract/sinkErrors.js';

const BROKER_PORT = 5672;
const never = new AbortController().signal;
let skipReason: string | undefined;
let admin: ChannelModel | undefined;
const cleanups: (() => Promise<unknown>)[] = [];
let counter = 0;

beforeAll(async () => {
  try {
    admin = await connect(
      { protocol: 'amqp', hostname: '127.0.0.1', port: BROKER_PORT, username: 'guest', password: 'guest' },
      { timeout: 2_000 },
    );
    admin.on('error', () => undefined);
  } catch (error) {
    skipReason = `no RabbitMQ at 127.0.0.1:${BROKER_PORT} (${(error as Error).message})`;
    if (process.env.CI) throw new Error(`rabbitmq: ${skipReason} (CI is set: broker tests must not be skipped)`);
    console.warn(`skipping rabbitmq sink tests: ${skipReason}`);
  }
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});
afterAll(async () => {
  await admin?.close().catch(() => undefined);
});

/** A fresh exchange name; deleted after the test. */
function newExchange(): string {
  const name = `cf.sinktest.${process.pid}.${Date.now().toString(36)}.${counter++}`;
  cleanups.push(() => withChannel((ch) => ch.deleteExchange(name)));
  return name;
}

async function withChannel<T>(use: (channel: Channel) => Promise<T>): Promise<T> {
  const channel = await admin!.createChannel();
  channel.on('error', () => undefined);
  try {
    return await use(channel);
  } finally {
    await channel.close().catch(() => undefined);
  }
}

/** A sink with test-friendly timeouts, closed after the test. */
function makeSink(config: Record<string, unknown>): RabbitmqSink {
  const sink = new RabbitmqSink(
    rabbitmqSinkConfigSchema.parse({ name: 'rabbit', type: 'rabbitmq', connectTimeoutMs: 2_000, ...config }),
  );
  cleanups.push(() => sink.close());
  return sink;
}

/** An exclusive queue bound to `exchange` (declared here if missing), consumed without acks. */
async function openQueue(exchange: string, bindingKey = '#', queueOptions: Options.AssertQueue = {}, consume = true) {
  const channel = await admin!.createChannel();
  channel.on('error', () => undefined);
  cleanups.push(() => channel.close());
  await channel.assertExchange(exchange, 'topic', { durable: true });
  const { queue } = await channel.assertQueue('', { exclusive: true, autoDelete: true, ...queueOptions });
  await channel.bindQueue(queue, exchange, bindingKey);
  const messages: ConsumeMessage[] = [];
  if (consume) await channel.consume(queue, (m) => void (m && messages.push(m)), { noAck: true });
  return {
    messages,
    async waitFor(count: number, timeoutMs = 30_000): Promise<ConsumeMessage[]> {
      const until = Date.now() + timeoutMs;
      while (messages.length < count && Date.now() < until) await sleep(10);
      return [...messages];
    },
  };
}

function makeEvents(
  count: number,
  options: { log?: LogKind; objectId?: string; event?: string } = {},
): OutboundEvent[] {
  const log = options.log ?? 'career';
  const objectId = options.objectId ?? 'car_1';
  const tag = `${Date.now().toString(36)}${counter++}`;
  return Array.from({ length: count }, (_, i) => {
    const entry: ActivityEntry = {
      id: `act_${tag}_${i}`,
      event: options.event ?? 'level_added',
      description: `Level ${i} added`,
      performedAt: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
    };
    const ce = buildCloudEvent(
      { tenant: 'default', log, objectId, entry, baseUrl: 'https://skills.example' },
      eventsConfigSchema.parse({}),
    );
    return {
      seq: i + 1,
      tenant: 'default',
      id: ce.id,
      type: ce.type,
      log,
      objectId,
      orderingKey: `${log}:${objectId}`,
      json: JSON.stringify(ce),
      attempt: 1,
    };
  });
}

const messageIdOf = (m: ConsumeMessage): string => String(m.properties.messageId);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a rejection');
}

describe('rabbitmq sink', () => {
  it('publishes persistent messages with the event id as messageId and the CloudEvents content type', async (ctx) => {
    if (skipReason) return ctx.skip();
    const exchange = newExchange();
    const queue = await openQueue(exchange);
    const sink = makeSink({ exchange: { name: exchange }, ceHeaders: true });
    await sink.connect(never);
    const events = makeEvents(3);
    await sink.write(events, never);
    const read = await queue.waitFor(3);
    expect(read.map(messageIdOf)).toEqual(events.map((e) => e.id));
    for (const [i, m] of read.entries()) {
      const event = events[i]!;
      expect(m.properties.deliveryMode).toBe(2);
      expect(m.properties.contentType).toBe('application/cloudevents+json');
      expect(m.properties.type).toBe(event.type);
      expect(m.content.toString('utf8')).toBe(event.json);
      expect(m.fields.routingKey).toBe(event.type);
      expect(m.properties.headers).toMatchObject({
        'cloudEvents:id': event.id,
        'cloudEvents:type': event.type,
        'cloudEvents:specversion': '1.0',
        'cloudEvents:subject': 'car_1',
      });
      expect(m.properties.headers).not.toHaveProperty('cloudEvents:data');
    }
  });

  it('routes by the routing-key template', async (ctx) => {
    if (skipReason) return ctx.skip();
    const exchange = newExchange();
    const wanted = await openQueue(exchange, 'career.level_removed.car_7');
    const all = await openQueue(exchange, '#');
    const sink = makeSink({ exchange: { name: exchange }, routingKey: 'x.{log}.{event}.{subject}' });
    await sink.connect(never);
    const removed = makeEvents(2, { objectId: 'car_7', event: 'level_removed' });
    const other = makeEvents(2, { objectId: 'car_8', event: 'level_removed' });
    const company = makeEvents(1, { log: 'identity_provider', objectId: '', event: 'user_added' });
    await sink.write([...removed, ...other, ...company], never);
    const read = await all.waitFor(5);
    expect(read.map((m) => m.fields.routingKey)).toEqual([
      'x.career.level_removed.car_7',
      'x.career.level_removed.car_7',
      'x.career.level_removed.car_8',
      'x.career.level_removed.car_8',
      'x.identity_provider.user_added._',
    ]);
    // The binding above ('career.level_removed.car_7') does not match the x. prefix: nothing there.
    expect(wanted.messages).toEqual([]);
    expect(() =>
      rabbitmqSinkConfigSchema.parse({
        name: 'r',
        type: 'rabbitmq',
        exchange: { name: 'e' },
        routingKey: '{log}.{object}',
      }),
    ).toThrow(/unknown placeholder \{object\}/);
  });

  it('reports a missing exchange as a misconfiguration, at connect and when it disappears later', async (ctx) => {
    if (skipReason) return ctx.skip();
    const exchange = newExchange();
    const sink = makeSink({ exchange: { name: exchange, declare: false } });
    const error = await rejection(sink.connect(never));
    expect(error).toBeInstanceOf(SinkUnavailableError);
    expect(error.message).toContain(`exchange "${exchange}" in vhost "/" at amqp://127.0.0.1:5672 does not exist`);
    expect(error.message).toContain('set exchange.declare: true');

    await withChannel((ch) => ch.assertExchange(exchange, 'topic', { durable: true }));
    await sink.connect(never);
    await sink.write(makeEvents(1), never);
    await withChannel((ch) => ch.deleteExchange(exchange));
    const lost = await rejection(sink.write(makeEvents(1), never));
    expect(lost).toBeInstanceOf(SinkUnavailableError);
    expect(lost.message).toContain('does not exist');
    expect((await rejection(sink.connect(never))).message).toContain('set exchange.declare: true');
  });

  it('treats unroutable messages as delivered unless mandatory is set, then as permanent failures', async (ctx) => {
    if (skipReason) return ctx.skip();
    const exchange = newExchange();
    const lenient = makeSink({ exchange: { name: exchange, declare: true } });
    await lenient.connect(never);
    await lenient.write(makeEvents(2), never);

    const strict = makeSink({ name: 'strict', exchange: { name: exchange, declare: true }, mandatory: true });
    await strict.connect(never);
    const events = makeEvents(3);
    const error = await rejection(strict.write(events, never));
    expect(error).toBeInstanceOf(SinkPartialFailureError);
    const failures = (error as SinkPartialFailureError).failures;
    expect([...failures.keys()]).toEqual(events.map((e) => e.id));
    expect([...failures.values()].every((f) => f.permanent && f.error.startsWith('unroutable'))).toBe(true);
    // A returned message still gets its confirm: the channel stays usable.
    await openQueue(exchange);
    await strict.write(makeEvents(2), never);
  });

  it('names exactly the events the broker nacked', async (ctx) => {
    if (skipReason) return ctx.skip();
    const exchange = newExchange();
    // A queue that holds one message and rejects the rest with a nack: a real, partial refusal.
    await openQueue(exchange, '#', { maxLength: 1, overflow: 'reject-publish' }, false);
    const sink = makeSink({ exchange: { name: exchange } });
    await sink.connect(never);
    const events = makeEvents(3);
    const error = await rejection(sink.write(events, never));
    expect(error).toBeInstanceOf(SinkPartialFailureError);
    const failures = (error as SinkPartialFailureError).failures;
    expect([...failures.keys()]).toEqual([events[1]!.id, events[2]!.id]);
    expect([...failures.values()].every((f) => !f.permanent && f.error.includes('nacked'))).toBe(true);
  });

  it('fails the in-flight write at once when the connection drops, and connect opens a new one', async (ctx) => {
    if (skipReason) return ctx.skip();
    const exchange = newExchange();
    const queue = await openQueue(exchange);
    const proxy = await startFrameProxy(BROKER_PORT);
    const sink = makeSink({
      url: `amqp://127.0.0.1:${proxy.port}`,
      exchange: { name: exchange },
      // Longer than the test may run: only the dropped connection can end the write in time.
      confirmTimeoutMs: 300_000,
    });
    await sink.connect(never);
    await sink.connect(never);
    expect(proxy.accepted).toBe(1);
    proxy.holdUpstream();
    const events = makeEvents(5);
    const writing = rejection(sink.write(events, never));
    // Dropped once the publishes are on the wire, waiting for confirms the broker never saw.
    await until(() => Promise.resolve(proxy.heldBytes > 0));
    proxy.dropConnections();
    const error = await writing;
    expect(error).toBeInstanceOf(SinkUnavailableError);
    expect(await rejection(sink.write(events, never))).toBeInstanceOf(SinkUnavailableError);
    await sink.connect(never);
    expect(proxy.accepted).toBe(2);
    await sink.write(events, never);
    expect((await queue.waitFor(5)).map(messageIdOf)).toEqual(events.map((e) => e.id));
  });

  it('treats the close a broker sends when it shuts down as a lost connection', async (ctx) => {
    if (skipReason) return ctx.skip();
    const exchange = newExchange();
    const queue = await openQueue(exchange);
    const proxy = await startFrameProxy(BROKER_PORT);
    const sink = makeSink({ url: `amqp://127.0.0.1:${proxy.port}`, exchange: { name: exchange } });
    await sink.connect(never);
    proxy.inject(connectionClose(320, "CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'"));
    await until(() =>
      sink.write([], never).then(
        () => false,
        (e: unknown) => e instanceof SinkUnavailableError,
      ),
    );
    const error = await rejection(sink.write(makeEvents(1), never));
    expect(error).toBeInstanceOf(SinkUnavailableError);
    expect(error.message).toMatch(
      /not connected to RabbitMQ at amqp:\/\/127\.0\.0\.1:\d+: .*320 \(CONNECTION-FORCED\)/,
    );
    proxy.dropConnections();
    await sink.connect(never);
    expect(proxy.accepted).toBe(2);
    const events = makeEvents(2);
    await sink.write(events, never);
    expect((await queue.waitFor(2)).map(messageIdOf)).toEqual(events.map((e) => e.id));
  });

  it('refuses writes at once while the broker blocks the connection, and resumes when it unblocks', async (ctx) => {
    if (skipReason) return ctx.skip();
    const exchange = newExchange();
    const queue = await openQueue(exchange);
    const proxy = await startFrameProxy(BROKER_PORT);
    const sink = makeSink({ url: `amqp://127.0.0.1:${proxy.port}`, exchange: { name: exchange } });
    await sink.connect(never);
    proxy.inject(connectionBlocked('low on memory'));
    // An empty write touches nothing but the blocked check: it tells when the frame was processed.
    await until(() =>
      sink.write([], never).then(
        () => false,
        (e: unknown) => e instanceof SinkBackoffError,
      ),
    );

    const events = makeEvents(4);
    // At once: nothing is published (the queue stays empty below), so no confirm is waited for.
    const error = await rejection(sink.write(events, never));
    expect(error).toBeInstanceOf(SinkBackoffError);
    expect((error as SinkBackoffError).retryAfterMs).toBe(BLOCKED_RETRY_MS);
    expect(error.message).toContain('low on memory');
    expect(queue.messages).toEqual([]);

    proxy.inject(connectionUnblocked());
    await until(() =>
      sink.write([], never).then(
        () => true,
        () => false,
      ),
    );
    await sink.write(events, never);
    expect((await queue.waitFor(4)).map(messageIdOf)).toEqual(events.map((e) => e.id));
    expect(proxy.accepted).toBe(1);
  });

  it(
    'fails an unconfirmed write after confirmTimeoutMs when the broker blocks mid-write, and ' + 'loses nothing',
    async (ctx) => {
      if (skipReason) return ctx.skip();
      const exchange = newExchange();
      const queue = await openQueue(exchange);
      const proxy = await startFrameProxy(BROKER_PORT);
      const sink = makeSink({
        url: `amqp://127.0.0.1:${proxy.port}`,
        exchange: { name: exchange },
        confirmTimeoutMs: 300,
      });
      await sink.connect(never);
      // What the broker does on an alarm: stop reading the publisher's socket, and say so.
      proxy.holdUpstream();
      const events = makeEvents(4);
      const started = Date.now();
      const writing = rejection(sink.write(events, never));
      proxy.inject(connectionBlocked('low on memory'));
      const error = await writing;
      expect(error).toBeInstanceOf(SinkUnavailableError);
      // Not before confirmTimeoutMs (a timer may fire a millisecond early); how long after is up to the machine.
      expect(Date.now() - started).toBeGreaterThanOrEqual(290);
      expect(error.message).toContain(
        'confirmed 0 of 4 messages within confirmTimeoutMs (300 ms): the connection is blocked (low on memory)',
      );

      // The engine reconnects after SinkUnavailableError: the blocked connection is kept, writes back off.
      await sink.connect(never);
      expect(proxy.accepted).toBe(1);
      expect(await rejection(sink.write(events, never))).toBeInstanceOf(SinkBackoffError);

      proxy.releaseUpstream();
      proxy.inject(connectionUnblocked());
      await until(() =>
        sink.write([], never).then(
          () => true,
          () => false,
        ),
      );
      await sink.write(events, never);
      // The held copies arrive too once the broker reads again: at least once, never lost.
      const ids = new Set((await queue.waitFor(8)).map(messageIdOf));
      expect(ids).toEqual(new Set(events.map((e) => e.id)));
    },
  );

  it('replaces a connection whose confirms stop arriving without a block', async (ctx) => {
    if (skipReason) return ctx.skip();
    const exchange = newExchange();
    const queue = await openQueue(exchange);
    const proxy = await startFrameProxy(BROKER_PORT);
    const sink = makeSink({
      url: `amqp://127.0.0.1:${proxy.port}`,
      exchange: { name: exchange },
      confirmTimeoutMs: 300,
    });
    await sink.connect(never);
    proxy.holdUpstream();
    const events = makeEvents(2);
    const error = await rejection(sink.write(events, never));
    expect(error).toBeInstanceOf(SinkUnavailableError);
    expect(error.message).toContain('reconnecting');
    await sink.connect(never);
    expect(proxy.accepted).toBe(2);
    await sink.write(events, never);
    expect((await queue.waitFor(2)).map(messageIdOf)).toEqual(events.map((e) => e.id));
  });

  it('keeps the password out of error messages, even when the broker refuses it', async (ctx) => {
    if (skipReason) return ctx.skip();
    const password = 'Wr0ng-pa55word-for-the-test';
    const sink = makeSink({ username: 'guest', password, exchange: { name: 'amq.topic' } });
    const error = await rejection(sink.connect(never));
    expect(error).toBeInstanceOf(SinkUnavailableError);
    expect(error.message).toContain('refused the login: check username and password');
    for (const text of [error.message, describeError(error), inspect(error, { depth: 5 }), String(error.stack)])
      expect(text).not.toContain(password);

    const withUrlCredentials = rabbitmqSinkConfigSchema.safeParse({
      name: 'r',
      type: 'rabbitmq',
      url: `amqp://guest:${password}@127.0.0.1:5672`,
      exchange: { name: 'e' },
    });
    expect(withUrlCredentials.success).toBe(false);
    expect(JSON.stringify(withUrlCredentials.error?.issues)).toContain('set username and password');
    expect(JSON.stringify(withUrlCredentials.error?.issues)).not.toContain(password);
  });
});

/** Polls `check` until it holds; the deadline only turns a hang into a failure, so it is generous. */
async function until(check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(10);
  }
}

/** An AMQP 0-9-1 method frame on channel 0: type 1, channel, size, class, method, arguments, 0xCE. */
function methodFrame(classId: number, methodId: number, args: Buffer): Buffer {
  const header = Buffer.alloc(11);
  header.writeUInt8(1, 0);
  header.writeUInt16BE(0, 1);
  header.writeUInt32BE(4 + args.length, 3);
  header.writeUInt16BE(classId, 7);
  header.writeUInt16BE(methodId, 9);
  return Buffer.concat([header, args, Buffer.from([0xce])]);
}
const connectionBlocked = (reason: string): Buffer =>
  methodFrame(10, 60, Buffer.concat([Buffer.from([Buffer.byteLength(reason)]), Buffer.from(reason)]));
const connectionUnblocked = (): Buffer => methodFrame(10, 61, Buffer.alloc(0));
/** connection.close: reply code, reply text, then the class and method that caused it (none). */
const connectionClose = (code: number, text: string): Buffer =>
  methodFrame(
    10,
    50,
    Buffer.concat([Buffer.from([code >> 8, code & 0xff, Buffer.byteLength(text)]), Buffer.from(text), Buffer.alloc(4)]),
  );

/**
 * A TCP proxy that forwards the broker's bytes in whole frames, so a frame it injects never lands
 * inside another, and that can stop passing the client's bytes on (and later pass what it held).
 */
async function startFrameProxy(targetPort: number) {
  const links: { client: Socket; upstream: Socket; held: Buffer[] | undefined }[] = [];
  let accepted = 0;
  const server = createServer((client) => {
    accepted++;
    const upstream = connectTcp(targetPort, '127.0.0.1');
    const link = { client, upstream, held: undefined as Buffer[] | undefined };
    links.push(link);
    let pending = Buffer.alloc(0);
    client.on('data', (chunk: Buffer) => (link.held ? link.held.push(chunk) : upstream.write(chunk)));
    upstream.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 7 && pending.length >= pending.readUInt32BE(3) + 8) {
        const end = pending.readUInt32BE(3) + 8;
        client.write(pending.subarray(0, end));
        pending = pending.subarray(end);
      }
    });
    const cut = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', cut).on('close', cut);
    upstream.on('error', cut).on('close', cut);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const dropConnections = (): void => {
    for (const link of links.splice(0)) {
      link.client.destroy();
      link.upstream.destroy();
    }
  };
  cleanups.push(async () => {
    dropConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return {
    port: (server.address() as AddressInfo).port,
    get accepted() {
      return accepted;
    },
    inject: (frame: Buffer): void => void links.forEach((l) => l.client.write(frame)),
    /** Bytes from the client held back so far. */
    get heldBytes() {
      return links.reduce((sum, l) => sum + (l.held ?? []).reduce((n, chunk) => n + chunk.length, 0), 0);
    },
    /** Stops passing the client's bytes of the open connections on; new connections pass. */
    holdUpstream: (): void => {
      for (const l of links) l.held ??= [];
    },
    releaseUpstream: (): void => {
      for (const l of links) {
        for (const chunk of l.held ?? []) l.upstream.write(chunk);
        l.held = undefined;
      }
    },
    dropConnections,
  };
}
