import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { connect as connectAmqp } from 'amqplib';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { scrubSecrets } from '../../src/secrets/secretRegistry.js';
import { MqttSink } from '../../src/sinks/mqttSink.js';
import { mqttSinkConfigSchema } from '../../src/sinks/mqttSinkConfig.js';
import { NatsSink } from '../../src/sinks/natsSink.js';
import { natsSinkConfigSchema } from '../../src/sinks/natsSinkConfig.js';
import { RabbitmqSink } from '../../src/sinks/rabbitmqSink.js';
import { rabbitmqSinkConfigSchema } from '../../src/sinks/rabbitmqSinkConfig.js';
import { RedisStreamsSink } from '../../src/sinks/redisStreamsSink.js';
import { redisStreamsSinkConfigSchema } from '../../src/sinks/redisStreamsSinkConfig.js';
import { SinkUnavailableError } from '../../src/sinkContract/sinkErrors.js';
import { outboundEvent } from '../support/outboundEvent.js';
import { rejection } from '../support/rejection.js';
import { missingBinary, skipOrFail } from '../support/requiredBinary.js';
import { makeTempDir } from '../support/tempDir.js';

/**
 * `passwordFile` (and NATS's `tokenFile`) on the broker sinks: the secret from a file of its own
 * reaches the broker, the config refuses it beside the inline value, and it is registered as a
 * secret. Against the brokers of this machine where they check credentials (RabbitMQ's guest on
 * loopback, a Redis ACL user, a nats-server started with a user or a token); MQTT's Mosquitto here
 * admits anonymous clients, so a loopback server reads the CONNECT packet instead.
 */
const never = new AbortController().signal;
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

function secretFile(content: string): string {
  const file = join(makeTempDir(), 'secret');
  writeFileSync(file, `${content}\n`);
  return file;
}

describe('the config: a secret inline or from its file, not both', () => {
  const base = {
    rabbitmq: { name: 's', type: 'rabbitmq', username: 'u', exchange: { name: 'x' } },
    redis: { name: 's', type: 'redis-streams' },
    mqtt: { name: 's', type: 'mqtt', url: 'mqtt://127.0.0.1:1883' },
    nats: { name: 's', type: 'nats', subject: 'a.b' },
  };
  const cases: {
    schema: { safeParse(v: unknown): { error?: { issues: { message: string }[] } } };
    config: object;
    refused?: string;
  }[] = [
    { schema: rabbitmqSinkConfigSchema, config: { ...base.rabbitmq, passwordFile: '/run/pw' } },
    {
      schema: rabbitmqSinkConfigSchema,
      config: { ...base.rabbitmq, password: 'p', passwordFile: '/run/pw' },
      refused: 'set either password or passwordFile, not both',
    },
    {
      schema: rabbitmqSinkConfigSchema,
      config: { ...base.rabbitmq, username: undefined, passwordFile: '/run/pw' },
      refused: 'password needs username',
    },
    { schema: redisStreamsSinkConfigSchema, config: { ...base.redis, passwordFile: '/run/pw' } },
    {
      schema: redisStreamsSinkConfigSchema,
      config: { ...base.redis, password: 'p', passwordFile: '/run/pw' },
      refused: 'not both',
    },
    { schema: mqttSinkConfigSchema, config: { ...base.mqtt, username: 'u', passwordFile: '/run/pw' } },
    {
      schema: mqttSinkConfigSchema,
      config: { ...base.mqtt, password: 'p', passwordFile: '/run/pw' },
      refused: 'not both',
    },
    { schema: natsSinkConfigSchema, config: { ...base.nats, user: 'u', passwordFile: '/run/pw' } },
    { schema: natsSinkConfigSchema, config: { ...base.nats, tokenFile: '/run/token' } },
    {
      schema: natsSinkConfigSchema,
      config: { ...base.nats, passwordFile: '/run/pw' },
      refused: 'user and password go together',
    },
    {
      schema: natsSinkConfigSchema,
      config: { ...base.nats, user: 'u', password: 'p', passwordFile: '/run/pw' },
      refused: 'set either password or passwordFile',
    },
    {
      schema: natsSinkConfigSchema,
      config: { ...base.nats, token: 't', tokenFile: '/run/token' },
      refused: 'set either token or tokenFile',
    },
    {
      schema: natsSinkConfigSchema,
      config: { ...base.nats, user: 'u', passwordFile: '/run/pw', tokenFile: '/run/token' },
      refused: 'set either token or user/password',
    },
  ];
  for (const { schema, config, refused } of cases)
    it(`${refused ? 'refuses' : 'accepts'} ${JSON.stringify(config)}`, () => {
      const issues = schema.safeParse(config).error?.issues.map((i) => i.message) ?? [];
      if (refused === undefined) expect(issues).toEqual([]);
      else expect(issues.join('; ')).toContain(refused);
    });
});

describe('rabbitmq: passwordFile', () => {
  it('logs in with the password from the file, and is refused with a wrong one that never shows', async (ctx) => {
    const reason = await connectAmqp('amqp://guest:guest@127.0.0.1:5672', { timeout: 2_000 }).then(
      async (c) => {
        await c.close();
        return undefined;
      },
      (error: Error) => `no RabbitMQ at 127.0.0.1:5672 (${error.message})`,
    );
    if (skipOrFail('rabbitmq passwordFile', reason)) return ctx.skip();
    const sinkWith = (password: string): RabbitmqSink => {
      const sink = new RabbitmqSink(
        rabbitmqSinkConfigSchema.parse({
          name: 'rabbit',
          type: 'rabbitmq',
          username: 'guest',
          passwordFile: secretFile(password),
          exchange: { name: 'amq.topic' },
          connectTimeoutMs: 2_000,
        }),
      );
      cleanups.push(() => sink.close());
      return sink;
    };
    await sinkWith('guest').connect(never);
    const wrong = `wrong-${process.pid}-pa55word`;
    const { error } = await rejection(sinkWith(wrong).connect(never));
    expect(error).toBeInstanceOf(SinkUnavailableError);
    expect(error.message).toContain('refused the login');
    expect(error.message).not.toContain(wrong);
    expect(scrubSecrets(`x ${wrong} y`)).toBe('x [redacted] y');
  });
});

describe('redis-streams: passwordFile', () => {
  it('authenticates an ACL user with the password from the file', async (ctx) => {
    const admin = new Redis({ port: 6379, lazyConnect: true, retryStrategy: () => null, connectTimeout: 2_000 });
    admin.on('error', () => undefined);
    const reason = await admin.connect().then(
      () => undefined,
      (error: Error) => `no Redis at 127.0.0.1:6379: ${error.message}`,
    );
    cleanups.push(() => Promise.resolve(admin.disconnect()));
    if (skipOrFail('redis-streams passwordFile', reason)) return ctx.skip();
    const tag = `pwf${process.pid}x${Date.now().toString(36)}`;
    const username = `user-${tag}`;
    const password = `pw-${tag}-FromFile`;
    await admin.call('ACL', 'SETUSER', username, 'reset', 'on', `>${password}`, `~${tag}:*`, '+xadd');
    cleanups.push(() => admin.call('ACL', 'DELUSER', username));
    cleanups.push(() => admin.del(`${tag}:career`));
    const sink = new RedisStreamsSink(
      redisStreamsSinkConfigSchema.parse({
        name: 'redis',
        type: 'redis-streams',
        prefix: tag,
        username,
        passwordFile: secretFile(password),
        connectTimeoutMs: 2_000,
        timeoutMs: 2_000,
      }),
    );
    cleanups.push(() => sink.close());
    await sink.connect(never);
    await sink.write([outboundEvent(1, { objectId: 'car_1' })], never);
    expect(await admin.xlen(`${tag}:career`)).toBe(1);
    expect(scrubSecrets(`x ${password} y`)).toBe('x [redacted] y');
  });
});

describe('nats: passwordFile and tokenFile', () => {
  const servers: ChildProcess[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) {
      server.kill();
      if (server.exitCode === null) await once(server, 'exit');
    }
  });
  /** A nats-server of its own with `args` (authorization), or a skip when the binary is missing. */
  const start = async (args: string[]): Promise<string> => {
    const port = await freePort();
    const child = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', makeTempDir(), ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    servers.push(child);
    await new Promise<void>((resolve, reject) => {
      let log = '';
      child.once('error', reject);
      child.stderr?.on('data', (chunk: Buffer) => {
        log += chunk.toString();
        if (log.includes('Server is ready')) resolve();
      });
    });
    return `nats://127.0.0.1:${port}`;
  };
  const reason = missingBinary('nats-server');

  it('logs in as a user with the password from the file; a wrong one is refused', async (ctx) => {
    if (skipOrFail('nats passwordFile', reason)) return ctx.skip();
    const password = `nats-${process.pid}-FromFile`;
    const url = await start(['--user', 'changefeed', '--pass', password]);
    const sinkWith = (file: string): NatsSink => {
      const sink = new NatsSink(
        natsSinkConfigSchema.parse({ name: 'n', type: 'nats', servers: url, user: 'changefeed', passwordFile: file }),
      );
      cleanups.push(() => sink.close());
      return sink;
    };
    await sinkWith(secretFile(password)).connect(never);
    const { error } = await rejection(sinkWith(secretFile(`${password}-wrong`)).connect(never));
    expect(error).toBeInstanceOf(SinkUnavailableError);
    expect(error.message).toMatch(/authorization violation/i);
    expect(`${error.message}${String(error.cause)}`).not.toContain(password);
  });

  it('authenticates with the token from tokenFile', async (ctx) => {
    if (skipOrFail('nats tokenFile', reason)) return ctx.skip();
    const token = `tok-${process.pid}-FromFile`;
    const url = await start(['--auth', token]);
    const sink = new NatsSink(
      natsSinkConfigSchema.parse({ name: 'n', type: 'nats', servers: url, tokenFile: secretFile(token) }),
    );
    cleanups.push(() => sink.close());
    await sink.connect(never);
    expect(scrubSecrets(`x ${token} y`)).toBe('x [redacted] y');
  });
});

describe('mqtt: passwordFile', () => {
  it('sends the password from the file in its CONNECT packet', async () => {
    const password = `mqtt-${process.pid}-FromFile`;
    let received = Buffer.alloc(0);
    let sawPassword: () => void = () => undefined;
    const seen = new Promise<void>((resolve) => (sawPassword = resolve));
    const server: Server = createServer((socket) => {
      socket.on('error', () => undefined);
      socket.on('data', (chunk: Buffer) => {
        received = Buffer.concat([received, chunk]).subarray(0, 4096);
        if (received.includes(password)) {
          sawPassword();
          socket.destroy();
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => server.close(resolve)));
    const sink = new MqttSink(
      mqttSinkConfigSchema.parse({
        name: 'm',
        type: 'mqtt',
        url: `mqtt://127.0.0.1:${(server.address() as AddressInfo).port}`,
        username: 'changefeed',
        passwordFile: secretFile(password),
        connectTimeoutMs: 2_000,
      }),
    );
    cleanups.push(() => sink.close());
    const connecting = rejection(sink.connect(never));
    await seen;
    // The server hung up instead of answering: the connect fails, without the password in it.
    const { error } = await connecting;
    expect(String(error)).not.toContain(password);
    expect(received[0]! >> 4).toBe(1); // CONNECT
  });
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
