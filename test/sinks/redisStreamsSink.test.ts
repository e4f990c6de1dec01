import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { scrubSecrets } from '../../src/secrets/secretRegistry.js';
import { RedisStreamsSink } from '../../src/sinks/redisStreamsSink.js';
import { redisStreamsSinkConfigSchema } from '../../src/sinks/redisStreamsSinkConfig.js';
import type { OutboundEvent } from '../../src/sinkContract/sink.js';
import { outboundEvent } from '../support/outboundEvent.js';
import { SinkPartialFailureError, SinkUnavailableError } from '../../src/sinkContract/sinkErrors.js';
import { rejection } from '../support/rejection.js';
import { startTcpProxy } from '../support/tcpProxy.js';

const REDIS_PORT = 6379;
let admin: Redis | undefined;
let skipReason: string | undefined;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  admin = new Redis({
    port: REDIS_PORT,
    lazyConnect: true,
    retryStrategy: () => null,
    enableOfflineQueue: false,
    connectTimeout: 2_000,
  });
  admin.on('error', () => undefined);
  try {
    await admin.connect();
  } catch (error) {
    skipReason = `no Redis at 127.0.0.1:${REDIS_PORT}: ${(error as Error).message}`;
    if (process.env.CI) throw new Error(`${skipReason} (CI is set: broker tests must not be skipped)`);
    console.warn(`skipping Redis streams sink tests: ${skipReason}`);
  }
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(() => {
  admin?.disconnect();
});

let counter = 0;
const newTag = (): string => `rs${process.pid}x${Date.now().toString(36)}x${counter++}`;
const never = new AbortController().signal;

const event = outboundEvent;
const events = (count: number, objectId = 'car_1'): OutboundEvent[] =>
  Array.from({ length: count }, (_, i) => event(i + 1, { objectId }));

/** A sink writing under the prefix `tag`; its keys are deleted after the test. */
function newSink(tag: string, config: Record<string, unknown> = {}): RedisStreamsSink {
  const sink = new RedisStreamsSink(
    redisStreamsSinkConfigSchema.parse({
      name: 'redis-test',
      type: 'redis-streams',
      prefix: tag,
      connectTimeoutMs: 2_000,
      timeoutMs: 2_000,
      ...config,
    }),
  );
  cleanups.push(() => sink.close());
  cleanups.push(async () => {
    const keys = await admin!.keys(`${tag}*`);
    if (keys.length > 0) await admin!.del(...keys);
  });
  return sink;
}

async function entries(key: string): Promise<Record<string, string>[]> {
  return (await admin!.xrange(key, '-', '+')).map(
    ([, flat]) =>
      Object.fromEntries(Array.from({ length: flat.length / 2 }, (_, i) => [flat[2 * i], flat[2 * i + 1]])) as Record<
        string,
        string
      >,
  );
}

/** A proxy to the broker that the test can freeze (a broker gone silent), closed after the test. */
async function silentCapableProxy(targetPort: number) {
  const proxy = await startTcpProxy(targetPort);
  cleanups.push(() => proxy.close());
  return proxy;
}

describe('redis-streams sink', () => {
  it(
    'adds each event as an entry of id, tenant, type, source, subject, time and the CloudEvent JSON, ' +
      'keyed {prefix}:{log} by default',
    async (ctx) => {
      if (skipReason) return ctx.skip();
      const tag = newTag();
      const sink = newSink(tag);
      const career = event(1, { objectId: 'car_7', tenant: 'acme' });
      const idp = event(2, { log: 'identity_provider', name: 'user_added', tenant: 'acme' });
      await sink.connect(never);
      await sink.write([career, idp], never);

      const [entry, ...more] = await entries(`${tag}:career`);
      expect(more).toEqual([]);
      expect(Object.keys(entry!)).toEqual(['id', 'tenant', 'type', 'source', 'subject', 'time', 'event']);
      expect(entry).toEqual({
        id: career.id,
        tenant: 'acme',
        type: 'com.skills.changefeed.career.level_added',
        source: 'https://skills.example/api/v1/careers/car_7/activity',
        subject: 'car_7',
        time: '2026-01-01T00:00:00.000Z',
        event: career.json,
      });
      expect(await entries(`${tag}:identity_provider`)).toEqual([
        {
          id: idp.id,
          tenant: 'acme',
          type: 'com.skills.changefeed.identity_provider.user_added',
          source: 'https://skills.example/api/v1/identity-provider-events',
          subject: '',
          time: '2026-01-01T00:00:00.000Z',
          event: idp.json,
        },
      ]);
    },
  );

  it(
    'renders every placeholder of the key template, with _ for the subject of the ' + 'identity-provider log',
    async (ctx) => {
      if (skipReason) return ctx.skip();
      const tag = newTag();
      const sink = newSink(tag, { key: '{prefix}/{log}/{event}/{subject}/{type}' });
      await sink.connect(never);
      await sink.write(
        [
          event(1, { objectId: 'car_3' }),
          event(2, { log: 'skill', objectId: 'sk_9', name: 'version_created' }),
          event(3, { log: 'identity_provider', name: 'user_added' }),
        ],
        never,
      );
      expect((await admin!.keys(`${tag}/*`)).sort()).toEqual([
        `${tag}/career/level_added/car_3/com.skills.changefeed.career.level_added`,
        `${tag}/identity_provider/user_added/_/com.skills.changefeed.identity_provider.user_added`,
        `${tag}/skill/version_created/sk_9/com.skills.changefeed.skill.version_created`,
      ]);
    },
  );

  it('rejects unknown placeholders and credentials in the URL', () => {
    const parse = (config: Record<string, unknown>) =>
      redisStreamsSinkConfigSchema.safeParse({ name: 'r', type: 'redis-streams', ...config });
    expect(parse({}).success).toBe(true);
    expect(parse({ key: '{prefix}:{objectId}' }).error?.issues[0]?.message).toMatch(/unknown placeholder \{objectId\}/);
    expect(parse({ url: 'redis://user:pw@127.0.0.1:6379' }).error?.issues[0]?.message).toMatch(/not in the URL/);
    expect(parse({ url: 'http://127.0.0.1:6379' }).success).toBe(false);
    expect(parse({ url: 'redis://127.0.0.1:6379/2' }).success).toBe(true);
    expect(parse({ url: 'redis://127.0.0.1:6379/streams' }).error?.issues[0]?.message).toMatch(/database number/);
  });

  it('keeps each stream near maxLen (MAXLEN ~), well below what was written', async (ctx) => {
    if (skipReason) return ctx.skip();
    const tag = newTag();
    const sink = newSink(tag, { maxLen: 100 });
    await sink.connect(never);
    for (let b = 0; b < 4; b++)
      await sink.write(
        events(500).map((e) => ({ ...e, id: `${e.id}-${b}` })),
        never,
      );
    const length = await admin!.xlen(`${tag}:career`);
    // Approximate trimming removes whole radix-tree nodes (100 entries by default): never below
    // maxLen, and bounded above by about one node more.
    expect(length).toBeGreaterThanOrEqual(100);
    expect(length).toBeLessThanOrEqual(300);
  });

  it('fails exactly the event whose XADD Redis refuses, and writes the others', async (ctx) => {
    if (skipReason) return ctx.skip();
    const tag = newTag();
    const sink = newSink(tag, { key: '{prefix}:{subject}' });
    await admin!.set(`${tag}:car_2`, 'a string, not a stream');
    await sink.connect(never);
    const batch = [event(1, { objectId: 'car_1' }), event(2, { objectId: 'car_2' }), event(3, { objectId: 'car_3' })];
    const { error } = await rejection(sink.write(batch, never));
    expect(error).toBeInstanceOf(SinkPartialFailureError);
    const failures = (error as SinkPartialFailureError).failures;
    expect([...failures.keys()]).toEqual([batch[1]!.id]);
    expect(failures.get(batch[1]!.id)).toMatchObject({
      permanent: false,
      error: expect.stringMatching(/^XADD .*:car_2: WRONGTYPE/) as string,
    });
    expect(await admin!.xlen(`${tag}:car_1`)).toBe(1);
    expect(await admin!.xlen(`${tag}:car_3`)).toBe(1);
  });

  it('fails fast with SinkUnavailableError when Redis is unreachable, before and after connecting', async (ctx) => {
    if (skipReason) return ctx.skip();
    const tag = newTag();
    const proxy = await startTcpProxy(REDIS_PORT);
    cleanups.push(() => proxy.close());
    // Timeouts longer than the test may run: failing fast is failing without waiting for one.
    const sink = newSink(tag, {
      url: `redis://127.0.0.1:${proxy.port}`,
      connectTimeoutMs: 120_000,
      timeoutMs: 300_000,
    });
    const unconnected = await rejection(sink.write(events(1), never));
    expect(unconnected.error).toBeInstanceOf(SinkUnavailableError);

    await sink.connect(never);
    await sink.write(events(1), never);
    await proxy.stop();
    const lost = await rejection(sink.write(events(10), never));
    expect(lost.error).toBeInstanceOf(SinkUnavailableError);
    const down = await rejection(sink.connect(never));
    expect(down.error).toBeInstanceOf(SinkUnavailableError);
    expect(down.error.message).toMatch(/cannot connect to Redis at redis:\/\/127\.0\.0\.1:\d+\/0: .*ECONNREFUSED/);

    await proxy.start();
    await sink.connect(never);
    await sink.write(events(3), never);
    expect(await admin!.xlen(`${tag}:career`)).toBe(4);
  });

  it('counts a batch Redis does not answer within timeoutMs as a lost connection', async (ctx) => {
    if (skipReason) return ctx.skip();
    const proxy = await silentCapableProxy(REDIS_PORT);
    const sink = newSink(newTag(), { url: `redis://127.0.0.1:${proxy.port}`, timeoutMs: 300 });
    await sink.connect(never);
    proxy.freeze();
    const { error, ms } = await rejection(sink.write(events(5), never));
    expect(error).toBeInstanceOf(SinkUnavailableError);
    expect(error.message).toMatch(/did not answer a batch within 300 ms/);
    expect(ms).toBeGreaterThanOrEqual(250); // not before timeoutMs; how long after is up to the machine
    expect((await rejection(sink.write(events(1), never))).error).toBeInstanceOf(SinkUnavailableError);
  });

  it('gives up connecting to a server that accepts the connection but never answers', async (ctx) => {
    if (skipReason) return ctx.skip();
    const proxy = await silentCapableProxy(REDIS_PORT);
    proxy.freeze();
    const sink = newSink(newTag(), { url: `redis://127.0.0.1:${proxy.port}`, connectTimeoutMs: 300 });
    const { error } = await rejection(sink.connect(never));
    expect(error).toBeInstanceOf(SinkUnavailableError);
    expect(error.message).toMatch(/not ready within 300 ms/);
  });

  it('authenticates as an ACL user with the least privilege, and never shows the password in errors', async (ctx) => {
    if (skipReason) return ctx.skip();
    const tag = newTag();
    const username = `user-${tag}`;
    const password = `pw-${tag}-Secret`;
    await admin!.call('ACL', 'SETUSER', username, 'reset', 'on', `>${password}`, `~${tag}:*`, '+xadd');
    cleanups.push(() => admin!.call('ACL', 'DELUSER', username));

    const sink = newSink(tag, { username, password });
    await sink.connect(never);
    await sink.write(events(2), never);
    expect(await admin!.xlen(`${tag}:career`)).toBe(2);
    const [entry] = await entries(`${tag}:career`);
    expect(JSON.stringify(entry)).not.toContain(password);

    const wrong = newSink(tag, { username, password: `${password}-wrong` });
    const { error } = await rejection(wrong.connect(never));
    expect(error).toBeInstanceOf(SinkUnavailableError);
    expect(error.message).toMatch(/WRONGPASS.*check username and password/);
    for (const secret of [password, `${password}-wrong`]) expect(error.message).not.toContain(secret);
    expect(scrubSecrets(`x ${password} y`)).toBe('x [redacted] y');
    // A user name is not a secret: scrubbing a common word from every log line would do harm.
    expect(scrubSecrets(`x ${username} y`)).toBe(`x ${username} y`);
  });
});
