import { connect, connectAsync, type IPublishPacket } from 'mqtt';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { scrubSecrets } from '../../src/secrets/secretRegistry.js';
import { MqttSink } from '../../src/sinks/mqttSink.js';
import { mqttSinkConfigSchema } from '../../src/sinks/mqttSinkConfig.js';
import type { OutboundEvent } from '../../src/sinkContract/sink.js';
import { outboundEvent } from '../support/outboundEvent.js';
import { SinkPartialFailureError, SinkUnavailableError } from '../../src/sinkContract/sinkErrors.js';
import { rejection } from '../support/rejection.js';
import { startTcpProxy } from '../support/tcpProxy.js';

const MQTT_PORT = 1883;
const BROKER = `mqtt://127.0.0.1:${MQTT_PORT}`;
let skipReason: string | undefined;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  try {
    const probe = await connectAsync(BROKER, { reconnectPeriod: 0, connectTimeout: 2_000 });
    await probe.endAsync();
  } catch (error) {
    skipReason = `no MQTT broker at ${BROKER}: ${(error as Error).message}`;
    if (process.env.CI) throw new Error(`${skipReason} (CI is set: broker tests must not be skipped)`);
    console.warn(`skipping MQTT sink tests: ${skipReason}`);
  }
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

let counter = 0;
const newTag = (): string => `mq${process.pid}x${Date.now().toString(36)}x${counter++}`;
const never = new AbortController().signal;

const event = outboundEvent;
const events = (count: number): OutboundEvent[] => Array.from({ length: count }, (_, i) => event(i + 1));

/** A sink publishing under the prefix `tag`, with a short-lived session. */
function newSink(tag: string, config: Record<string, unknown> = {}): MqttSink {
  const sink = new MqttSink(
    mqttSinkConfigSchema.parse({
      name: `sink-${tag}`,
      type: 'mqtt',
      url: BROKER,
      prefix: tag,
      sessionExpirySeconds: 10,
      connectTimeoutMs: 2_000,
      timeoutMs: 2_000,
      ...config,
    }),
  );
  cleanups.push(() => sink.close());
  return sink;
}

/** A QoS 1 subscriber to `<tag>/#` (or `filter`), started before anything is published. */
async function subscribe(
  tag: string,
  filter = `${tag}/#`,
): Promise<{ packets: IPublishPacket[]; waitFor(count: number): Promise<IPublishPacket[]> }> {
  const client = await connectAsync(BROKER, {
    reconnectPeriod: 0,
    protocolVersion: 5,
    clientId: `sub-${tag}-${counter++}`,
    clean: true,
    properties: { receiveMaximum: 65_535 },
  });
  cleanups.push(() => client.endAsync(true));
  const packets: IPublishPacket[] = [];
  client.on('message', (_topic, _payload, packet) => packets.push(packet));
  await client.subscribeAsync(filter, { qos: 1 });
  return {
    packets,
    async waitFor(count) {
      const until = Date.now() + 30_000; // only turns a hang into a failure
      while (packets.length < count && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 10));
      return packets;
    },
  };
}

/** A proxy to the broker that the test can freeze (a broker gone silent), closed after the test. */
async function silentCapableProxy(targetPort: number) {
  const proxy = await startTcpProxy(targetPort);
  cleanups.push(() => proxy.close());
  return proxy;
}

describe('mqtt sink', () => {
  it('publishes the CloudEvent JSON at QoS 1 to {prefix}/{log}/{event} by default, in order', async (ctx) => {
    if (skipReason) return ctx.skip();
    const tag = newTag();
    const reader = await subscribe(tag);
    const sink = newSink(tag);
    const batch = [...events(3), event(4, { log: 'identity_provider', name: 'user_added' })];
    await sink.connect(never);
    await sink.write(batch, never);
    const packets = await reader.waitFor(4);
    expect(packets.map((p) => p.topic)).toEqual([
      `${tag}/career/level_added`,
      `${tag}/career/level_added`,
      `${tag}/career/level_added`,
      `${tag}/identity_provider/user_added`,
    ]);
    expect(packets.map((p) => p.payload.toString())).toEqual(batch.map((e) => e.json));
    expect(packets[0]).toMatchObject({
      qos: 1,
      retain: false,
      properties: { contentType: 'application/cloudevents+json', payloadFormatIndicator: true },
    });
    expect(packets[0]!.properties?.userProperties).toBeUndefined();
  });

  it('renders every placeholder of the topic template; values cannot add levels or wildcards', async (ctx) => {
    if (skipReason) return ctx.skip();
    const tag = newTag();
    const reader = await subscribe(tag);
    const sink = newSink(tag, { topic: '{prefix}/{log}/{subject}/{event}/{type}' });
    await sink.connect(never);
    await sink.write(
      [
        event(1, { objectId: 'car/3+#' }),
        event(2, { log: 'skill', objectId: 'sk_9', name: 'version_created' }),
        event(3, { log: 'identity_provider', name: 'user_added' }),
      ],
      never,
    );
    expect((await reader.waitFor(3)).map((p) => p.topic)).toEqual([
      `${tag}/career/car%2F3%2B%23/level_added/com.skills.changefeed.career.level_added`,
      `${tag}/skill/sk_9/version_created/com.skills.changefeed.skill.version_created`,
      `${tag}/identity_provider/_/user_added/com.skills.changefeed.identity_provider.user_added`,
    ]);
  });

  it('publishes over MQTT 3.1.1 (protocolVersion 4), without MQTT 5 properties', async (ctx) => {
    if (skipReason) return ctx.skip();
    const tag = newTag();
    const reader = await subscribe(tag);
    // A 3.1.1 session has no expiry: once the sink closed, end it with a clean connection.
    cleanups.push(async () =>
      (
        await connectAsync(BROKER, { reconnectPeriod: 0, protocolVersion: 4, clientId: `pub-${tag}`, clean: true })
      ).endAsync(),
    );
    const sink = newSink(tag, { protocolVersion: 4, clientId: `pub-${tag}` });
    const batch = events(3);
    await sink.connect(never);
    await sink.write(batch, never);
    const packets = await reader.waitFor(3);
    expect(packets.map((p) => p.payload.toString())).toEqual(batch.map((e) => e.json));
    expect(packets[0]!.properties?.contentType).toBeUndefined();
  });

  it('rejects invalid topic templates, credentials in the URL and user properties without MQTT 5', () => {
    const parse = (config: Record<string, unknown>) =>
      mqttSinkConfigSchema.safeParse({ name: 'm', type: 'mqtt', ...config });
    expect(parse({}).success).toBe(true);
    expect(parse({ topic: '{prefix}/{objectId}' }).error?.issues[0]?.message).toMatch(
      /unknown placeholder \{objectId\}/,
    );
    expect(parse({ topic: '{prefix}/+/x' }).error?.issues[0]?.message).toMatch(/no wildcards/);
    expect(parse({ topic: '$SYS/{log}' }).error?.issues[0]?.message).toMatch(/not starting with \$/);
    expect(parse({ url: 'mqtt://user:pw@127.0.0.1:1883' }).error?.issues[0]?.message).toMatch(/not in the URL/);
    expect(parse({ ceUserProperties: true, protocolVersion: 4 }).error?.issues[0]?.message).toMatch(/need MQTT 5/);
  });

  it(
    'puts the CloudEvent attributes in user properties with ceUserProperties, and retains with ' + 'retain',
    async (ctx) => {
      if (skipReason) return ctx.skip();
      const tag = newTag();
      const sink = newSink(tag, { ceUserProperties: true, retain: true });
      const published = event(1, { objectId: 'car_5', tenant: 'acme' });
      await sink.connect(never);
      await sink.write([published], never);
      // Subscribed only now: the broker hands over the retained message.
      const reader = await subscribe(tag);
      const [packet] = await reader.waitFor(1);
      cleanups.push(async () => {
        const clear = await connectAsync(BROKER, { reconnectPeriod: 0 });
        await clear.publishAsync(packet!.topic, '', { qos: 1, retain: true });
        await clear.endAsync();
      });
      expect(packet).toMatchObject({ retain: true, payload: Buffer.from(published.json) });
      expect({ ...packet!.properties?.userProperties }).toEqual({
        specversion: '1.0',
        tenant: 'acme',
        id: published.id,
        source: 'https://skills.example/api/v1/careers/car_5/activity',
        type: 'com.skills.changefeed.career.level_added',
        entryid: 'act_1',
        subject: 'car_5',
        time: '2026-01-01T00:00:00.000Z',
      });
    },
  );

  it(
    'resumes the broker session of its stable client id, changefeed-<name>, instead of ' + 'starting a clean one',
    async (ctx) => {
      if (skipReason) return ctx.skip();
      const tag = newTag();
      const clientId = `changefeed-sink-${tag}`;
      const resume = async (expirySeconds: number) => {
        const client = connect(BROKER, {
          reconnectPeriod: 0,
          protocolVersion: 5,
          clientId,
          clean: false,
          properties: { sessionExpiryInterval: expirySeconds },
        });
        cleanups.push(() => client.endAsync());
        const messages: string[] = [];
        client.on('message', (_topic, payload) => messages.push(payload.toString()));
        const connack = await new Promise<{ sessionPresent: boolean }>((resolve, reject) =>
          client.once('connect', resolve).once('error', reject),
        );
        return { client, messages, sessionPresent: connack.sessionPresent };
      };
      // A session with a subscription in it, under the id the sink should use.
      const first = await resume(30);
      await first.client.subscribeAsync(`${tag}/probe`, { qos: 1 });
      const takenOver = new Promise<boolean>((resolve) => first.client.once('close', () => resolve(true)));

      const sink = newSink(tag);
      await sink.connect(never);
      // Same client id: the broker hands the session to the sink and drops the first client (if
      // it never does, the test times out).
      expect(await takenOver).toBe(true);
      await sink.write(events(1), never);
      await sink.close();

      // Queued for the session only if the sink's connection kept it (and its subscription) alive.
      const publisher = await connectAsync(BROKER, { reconnectPeriod: 0 });
      await publisher.publishAsync(`${tag}/probe`, 'kept for the session', { qos: 1 });
      await publisher.endAsync();
      const again = await resume(0);
      const until = Date.now() + 30_000; // only turns a hang into a failure
      while (again.messages.length === 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(again.sessionPresent).toBe(true);
      expect(again.messages).toEqual(['kept for the session']);
    },
  );

  it('fails exactly the events whose PUBACK carries an error reason code, and publishes the others', async (ctx) => {
    if (skipReason) return ctx.skip();
    const tag = newTag();
    const reader = await subscribe(tag, `+/${tag}`);
    // Mosquitto refuses publishes to $SYS topics with PUBACK 0x87 (not authorized).
    const sink = newSink(tag, { topic: '{subject}/{prefix}' });
    const batch = [event(1, { objectId: 'car_1' }), event(2, { objectId: '$SYS' }), event(3, { objectId: 'car_3' })];
    await sink.connect(never);
    const { error } = await rejection(sink.write(batch, never));
    expect(error).toBeInstanceOf(SinkPartialFailureError);
    const failures = (error as SinkPartialFailureError).failures;
    expect([...failures.keys()]).toEqual([batch[1]!.id]);
    expect(failures.get(batch[1]!.id)).toEqual({ error: 'PUBACK 135: Not authorized', permanent: false, status: 135 });
    expect((await reader.waitFor(2)).map((p) => p.topic)).toEqual([`car_1/${tag}`, `car_3/${tag}`]);
  });

  it(
    'fails fast with SinkUnavailableError when the broker is unreachable, before, during and ' + 'after a batch',
    async (ctx) => {
      if (skipReason) return ctx.skip();
      const tag = newTag();
      const reader = await subscribe(tag);
      const proxy = await startTcpProxy(MQTT_PORT);
      cleanups.push(() => proxy.close());
      // Timeouts longer than the test may run: failing fast is failing without waiting for one.
      const sink = newSink(tag, {
        url: `mqtt://127.0.0.1:${proxy.port}`,
        connectTimeoutMs: 120_000,
        timeoutMs: 300_000,
      });
      expect((await rejection(sink.write(events(1), never))).error).toBeInstanceOf(SinkUnavailableError);

      await sink.connect(never);
      // Cut while the PUBACKs are outstanding: mqtt.js would keep them waiting for a reconnect.
      const during = rejection(sink.write(events(50), never));
      proxy.dropConnections();
      const cut = await during;
      expect(cut.error).toBeInstanceOf(SinkUnavailableError);
      expect(cut.error.message).toMatch(/connection to the MQTT broker at mqtt:\/\/127\.0\.0\.1:\d+ lost/);
      const after = await rejection(sink.write(events(1), never));
      expect(after.error).toBeInstanceOf(SinkUnavailableError);

      await proxy.stop();
      const down = await rejection(sink.connect(never));
      expect(down.error).toBeInstanceOf(SinkUnavailableError);
      expect(down.error.message).toMatch(
        /cannot connect to the MQTT broker at mqtt:\/\/127\.0\.0\.1:\d+: .*ECONNREFUSED/,
      );

      await proxy.start();
      await sink.connect(never);
      const before = reader.packets.length;
      await sink.write(events(2), never);
      expect((await reader.waitFor(before + 2)).length).toBeGreaterThanOrEqual(before + 2);
    },
  );

  it('counts a batch without a PUBACK for timeoutMs as a lost connection', async (ctx) => {
    if (skipReason) return ctx.skip();
    const proxy = await silentCapableProxy(MQTT_PORT);
    const sink = newSink(newTag(), { url: `mqtt://127.0.0.1:${proxy.port}`, timeoutMs: 300 });
    await sink.connect(never);
    proxy.freeze();
    const { error, ms } = await rejection(sink.write(events(5), never));
    expect(error).toBeInstanceOf(SinkUnavailableError);
    expect(error.message).toMatch(/no PUBACK .* within 300 ms/);
    expect(ms).toBeGreaterThanOrEqual(250); // not before timeoutMs; how long after is up to the machine
    expect((await rejection(sink.write(events(1), never))).error).toBeInstanceOf(SinkUnavailableError);
  });

  it('gives up connecting to a broker that accepts the connection but never sends CONNACK', async (ctx) => {
    if (skipReason) return ctx.skip();
    const proxy = await silentCapableProxy(MQTT_PORT);
    proxy.freeze();
    const sink = newSink(newTag(), { url: `mqtt://127.0.0.1:${proxy.port}`, connectTimeoutMs: 300 });
    const { error } = await rejection(sink.connect(never));
    expect(error).toBeInstanceOf(SinkUnavailableError);
    expect(error.message).toMatch(/connack timeout/);
  });

  it('never shows the password in messages or errors, and does not treat the user name as a secret', async (ctx) => {
    if (skipReason) return ctx.skip();
    const tag = newTag();
    const username = `user-${tag}`;
    const password = `pw-${tag}-Secret`;
    const reader = await subscribe(tag);
    // Mosquitto here admits anyone, so the credentials are sent and ignored.
    const sink = newSink(tag, { username, password, ceUserProperties: true });
    await sink.connect(never);
    await sink.write(events(2), never);
    for (const p of await reader.waitFor(2))
      expect(`${p.topic}${p.payload.toString()}${JSON.stringify(p.properties)}`).not.toMatch(
        new RegExp(`${username}|${password}`),
      );

    const closedPort = (await startTcpProxy(MQTT_PORT)) as { port: number; close(): Promise<void> };
    await closedPort.close();
    const unreachable = newSink(tag, { url: `mqtt://127.0.0.1:${closedPort.port}`, username, password });
    const { error } = await rejection(unreachable.connect(never));
    expect(error).toBeInstanceOf(SinkUnavailableError);
    expect(error.message).not.toContain(password);
    expect(scrubSecrets(`x ${password} y`)).toBe('x [redacted] y');
    // A user name is not a secret: scrubbing a common word from every log line would do harm.
    expect(scrubSecrets(`x ${username} y`)).toBe(`x ${username} y`);
  });
});

// An event name holding \r\n or \u0001 made mosquitto drop the connection; the sink reconnected
// and resent the same batch for ever: 0 delivered.
describe('mqtt sink with hostile event names', () => {
  it('escapes every byte MQTT forbids or reserves in a topic level, and delivers every event', async (ctx) => {
    if (skipReason) return ctx.skip();
    const tag = newTag();
    const received = await subscribe(tag);
    const sink = newSink(tag);
    await sink.connect(never);
    const names = ['line\r\nbreak', 'bell\u0001', 'nul\u0000', 'wild+#/card', 'del\u007f', 'lone\ud800', 'fine'];
    const batch = Array.from({ length: 20 }, (_, i) => event(i + 1, { name: names[i % names.length] }));
    await sink.write(batch, never);
    const packets = await received.waitFor(20);
    expect(packets).toHaveLength(20);
    const topics = new Set(packets.map((p) => p.topic));
    // eslint-disable-next-line no-control-regex -- no control character may reach a topic
    expect([...topics].every((t) => !/[\u0000-\u001f\u007f+#]/.test(t))).toBe(true);
    expect(topics).toContain(`${tag}/career/line%0D%0Abreak`);
    expect(topics).toContain(`${tag}/career/lone\ufffd`);
  });
});
