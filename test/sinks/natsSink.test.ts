import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import {
  DiscardPolicy,
  jetstreamManager,
  type JetStreamManager,
  type StoredMsg,
  type StreamConfig,
} from '@nats-io/jetstream';
import { connect, nanos, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AbortedError } from '../../src/errors.js';
import { scrubSecrets } from '../../src/secrets/secretRegistry.js';
import { NatsSink } from '../../src/sinks/natsSink.js';
import { natsSinkConfigSchema } from '../../src/sinks/natsSinkConfig.js';
import type { OutboundEvent } from '../../src/sinkContract/sink.js';
import { outboundEvent } from '../support/outboundEvent.js';
import { SinkPartialFailureError, SinkUnavailableError } from '../../src/sinkContract/sinkErrors.js';
import { until } from '../support/daemonProcess.js';
import { startTcpProxy } from '../support/tcpProxy.js';

const NATS_URL = 'nats://127.0.0.1:4222';
/** The longest timeoutMs the sink takes, twice the test timeout: a wait for it shows as a timed-out test. */
const LONGER_THAN_A_TEST_MS = 120_000;
const PASSWORD = 'hunter2-nats-password';
const TOKEN = 'tok-9f8e7d6c5b4a';

let admin: NatsConnection | undefined;
let jsm: JetStreamManager;
let skipReason: string | undefined;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  try {
    admin = await connect({ servers: NATS_URL, reconnect: false, timeout: 2_000 });
    jsm = await jetstreamManager(admin);
  } catch (error) {
    skipReason = `no NATS server with JetStream at ${NATS_URL}: ${(error as Error).message}`;
    await admin?.close();
    if (process.env.CI) throw new Error(`${skipReason} (CI is set: broker tests must not be skipped)`);
    console.warn(`skipping NATS sink tests: ${skipReason}`);
  }
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(async () => {
  await admin?.close();
});

let counter = 0;
const newTag = (): string => `ns${process.pid}x${Date.now().toString(36)}x${counter++}`;

const event = outboundEvent;
/** `count` events spread over `objects` careers, each career's in order. */
const events = (count: number, objects = 1): OutboundEvent[] =>
  Array.from({ length: count }, (_, i) => event(i + 1, { objectId: `car_${i % objects}` }));

/** A connected sink writing to `<tag>.…`; its stream is removed after the test. */
async function openSink(tag: string, config: Record<string, unknown> = {}): Promise<NatsSink> {
  const sink = new NatsSink(
    natsSinkConfigSchema.parse({
      name: 'nats-test',
      type: 'nats',
      servers: NATS_URL,
      subject: `${tag}.{type}`,
      timeoutMs: 2_000,
      stream: { name: `CF_${tag}`, create: true, subjects: [`${tag}.>`] },
      ...config,
    }),
  );
  cleanups.push(() => sink.close());
  cleanups.push(() => jsm.streams.delete(`CF_${tag}`).catch(() => undefined));
  await sink.connect(new AbortController().signal);
  return sink;
}

async function addStream(config: Partial<StreamConfig> & { name: string }): Promise<void> {
  await jsm.streams.add(config);
  cleanups.push(() => jsm.streams.delete(config.name).catch(() => undefined));
}

async function storedMessages(stream: string): Promise<StoredMsg[]> {
  const { state } = await jsm.streams.info(stream);
  const seqs = Array.from({ length: state.messages }, (_, i) => state.first_seq + i);
  const stored = await Promise.all(seqs.map((seq) => jsm.streams.getMessage(stream, { seq })));
  return stored.filter((m): m is StoredMsg => m !== null);
}

const headersOf = (m: StoredMsg): Record<string, string> =>
  Object.fromEntries(m.header ? [...m.header.keys()].map((k) => [k, m.header.get(k)]) : []);
const rejectionOf = async (promise: Promise<unknown>): Promise<Error> =>
  promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: Error) => error,
  );
const signal = (): AbortSignal => new AbortController().signal;

describe('nats sink config', () => {
  const parse = (extra: Record<string, unknown>) =>
    natsSinkConfigSchema.safeParse({ name: 'n', type: 'nats', ...extra });

  it('defaults to the CloudEvent type as subject on the local server, without ce-* headers', () => {
    expect(natsSinkConfigSchema.parse({ name: 'n', type: 'nats' })).toMatchObject({
      servers: ['nats://127.0.0.1:4222'],
      subject: '{type}',
      timeoutMs: 5_000,
      ceHeaders: false,
    });
  });

  it('rejects unknown placeholders, wildcards and empty tokens in the subject template', () => {
    expect(parse({ subject: 'a.{objectid}' }).error?.issues[0]?.message).toMatch(/unknown placeholder \{objectid\}/);
    expect(parse({ subject: 'a.*.{log}' }).success).toBe(false);
    expect(parse({ subject: 'a..{log}' }).success).toBe(false);
    expect(parse({ subject: 'a.{log' }).success).toBe(false);
    expect(parse({ subject: 'cf.{log}.{event}.{subject}' }).success).toBe(true);
  });

  it('asks for stream subjects when a {type}-first template would make the stream capture everything', () => {
    expect(parse({ stream: { name: 'S', create: true } }).error?.issues[0]).toMatchObject({
      path: ['stream', 'subjects'],
    });
    expect(parse({ stream: { name: 'S', create: true, subjects: ['com.skills.changefeed.>'] } }).success).toBe(true);
    expect(parse({ subject: 'cf.{type}', stream: { name: 'S', create: true } }).success).toBe(true);
  });

  it('keeps credentials out of server URLs and accepts either token or user/password', () => {
    expect(parse({ servers: ['nats://u:p@127.0.0.1:4222'] }).success).toBe(false);
    expect(parse({ user: 'u', password: PASSWORD, token: TOKEN }).success).toBe(false);
    expect(parse({ user: 'u' }).success).toBe(false);
    expect(parse({ user: 'u', password: PASSWORD }).success).toBe(true);
  });
});

describe('nats sink against a real JetStream server', () => {
  it('drops a re-sent batch within the duplicate window: the stream holds each event id once', async (ctx) => {
    if (skipReason) return ctx.skip();
    const tag = newTag();
    const sink = await openSink(tag, {
      stream: { name: `CF_${tag}`, create: true, subjects: [`${tag}.>`], duplicateWindowSeconds: 60 },
    });
    const batch = events(50);
    await sink.write(batch, signal());
    await sink.write(batch, signal());
    const info = await jsm.streams.info(`CF_${tag}`);
    expect(info.config.duplicate_window).toBe(nanos(60_000));
    expect(info.state.messages).toBe(50);
    expect((await storedMessages(`CF_${tag}`)).map((m) => m.header.get('Nats-Msg-Id'))).toEqual(batch.map((e) => e.id));
  });

  it(
    'publishes to the subject rendered from the template, and derives the created stream ' + 'subjects from it',
    async (ctx) => {
      if (skipReason) return ctx.skip();
      const tag = newTag();
      const sink = await openSink(tag, {
        subject: `${tag}.{log}.{event}.{subject}`,
        stream: { name: `CF_${tag}`, create: true },
      });
      expect((await jsm.streams.info(`CF_${tag}`)).config.subjects).toEqual([`${tag}.*.*.*`]);
      await sink.write(
        [
          event(1, { objectId: 'car.7 x' }),
          event(2, { log: 'identity_provider', name: 'user_created' }),
          event(3, { log: 'skill', objectId: 'sk_1', name: 'version_created' }),
        ],
        signal(),
      );
      expect((await storedMessages(`CF_${tag}`)).map((m) => m.subject)).toEqual([
        `${tag}.career.level_added.car%2E7%20x`,
        `${tag}.identity_provider.user_created._`,
        `${tag}.skill.version_created.sk_1`,
      ]);

      const typed = await openSink(`${tag}t`);
      await typed.write([event(1)], signal());
      expect((await storedMessages(`CF_${tag}t`))[0]?.subject).toBe(`${tag}t.com.skills.changefeed.career.level_added`);
    },
  );

  it(
    'puts every CloudEvent attribute in a ce-* header when ceHeaders is on; the body is the ' + 'CloudEvent either way',
    async (ctx) => {
      if (skipReason) return ctx.skip();
      const plainTag = newTag();
      const ceTag = newTag();
      const plain = await openSink(plainTag);
      const withCe = await openSink(ceTag, { ceHeaders: true });
      const sent = event(1, { objectId: 'car 1' });
      await plain.write([sent], signal());
      await withCe.write([sent], signal());
      const [p] = await storedMessages(`CF_${plainTag}`);
      const [c] = await storedMessages(`CF_${ceTag}`);
      expect(p!.string()).toBe(sent.json);
      expect(c!.string()).toBe(sent.json);
      expect(Object.keys(headersOf(p!)).filter((k) => k.startsWith('ce-'))).toEqual([]);
      expect(headersOf(c!)).toMatchObject({
        'Nats-Msg-Id': sent.id,
        'content-type': 'application/cloudevents+json',
        'ce-id': sent.id,
        'ce-type': sent.type,
        'ce-specversion': '1.0',
        'ce-subject': 'car%201',
        'ce-source': 'https://skills.example/api/v1/careers/car%25201/activity',
        'ce-entryid': 'act_1',
      });
    },
  );

  it(
    'refuses to connect when the configured stream is missing and create is off, saying how to ' + 'fix it',
    async (ctx) => {
      if (skipReason) return ctx.skip();
      const tag = newTag();
      const sink = new NatsSink(
        natsSinkConfigSchema.parse({
          name: 'n',
          type: 'nats',
          subject: `${tag}.{type}`,
          stream: { name: `CF_${tag}` },
        }),
      );
      const error = await rejectionOf(sink.connect(signal()));
      expect(error).toBeInstanceOf(SinkUnavailableError);
      expect(error.message).toMatch(
        new RegExp(`stream CF_${tag} does not exist: create it with subjects ${tag}\\.>, or set stream.create: true`),
      );
      await expect(jsm.streams.info(`CF_${tag}`)).rejects.toThrow(/stream not found/);
    },
  );

  it('fails a publish that no stream captures with SinkUnavailableError saying to create the stream', async (ctx) => {
    if (skipReason) return ctx.skip();
    const tag = newTag();
    const sink = new NatsSink(natsSinkConfigSchema.parse({ name: 'n', type: 'nats', subject: `${tag}.{type}` }));
    cleanups.push(() => sink.close());
    await sink.connect(signal());
    const error = await rejectionOf(sink.write(events(3), signal()));
    expect(error).toBeInstanceOf(SinkUnavailableError);
    expect(error.message).toMatch(
      new RegExp(`no JetStream stream captures subject ${tag}\\.com\\.skills.*set stream\\.create: true`),
    );
  });

  it(
    "names exactly the refused event, stores the other objects' events and holds back the rest " +
      'of its object unsent',
    async (ctx) => {
      if (skipReason) return ctx.skip();
      const tag = newTag();
      await addStream({ name: `CF_${tag}`, subjects: [`${tag}.>`], max_msg_size: 4_096 });
      const sink = await openSink(tag, { stream: { name: `CF_${tag}` } });
      const batch = [
        event(1),
        event(2, { description: 'x'.repeat(8_000) }),
        event(3, { objectId: 'car_2' }),
        event(4),
        event(5, { objectId: 'car_2' }),
      ];
      const error = await rejectionOf(sink.write(batch, signal()));
      expect(error).toBeInstanceOf(SinkPartialFailureError);
      expect(error.message).toMatch(
        /1 of 5 events refused .* \(1 later events of their objects held back\): JetStream 10054/,
      );
      const failures = (error as SinkPartialFailureError).failures;
      expect([...failures.keys()]).toEqual([batch[1]!.id]);
      expect(failures.get(batch[1]!.id)).toMatchObject({ permanent: true, status: 400 });
      // Event 4 follows the refused event of car_1: not published, so the engine can send it after a retry of event 2.
      const stored = (await storedMessages(`CF_${tag}`)).map((m) => m.header.get('Nats-Msg-Id'));
      expect(stored.sort()).toEqual([batch[0]!.id, batch[2]!.id, batch[4]!.id].sort());
    },
  );

  it(
    'reports a full stream as a transient failure of that event only, publishing nothing after ' + 'it for its object',
    async (ctx) => {
      if (skipReason) return ctx.skip();
      const tag = newTag();
      await addStream({ name: `CF_${tag}`, subjects: [`${tag}.>`], max_msgs: 2, discard: DiscardPolicy.New });
      const sink = await openSink(tag, { stream: { name: `CF_${tag}` } });
      const batch = [event(1), event(2), event(3), event(4, { objectId: 'car_2' })];
      const error = await rejectionOf(sink.write(batch, signal()));
      expect(error).toBeInstanceOf(SinkPartialFailureError);
      const failures = (error as SinkPartialFailureError).failures;
      expect([...failures.keys()]).toEqual([batch[1]!.id]);
      expect(failures.get(batch[1]!.id)).toMatchObject({
        permanent: false,
        status: 503,
        error: expect.stringMatching(/maximum messages exceeded/),
      });
    },
  );

  it('reports a lost connection on the next write at once, and writes again after connect', async (ctx) => {
    if (skipReason) return ctx.skip();
    const tag = newTag();
    const proxy = await startTcpProxy(4222);
    cleanups.push(() => proxy.close());
    // An acknowledgement timeout longer than the test may run: a write that waited for one
    // instead of reporting the lost connection could only end with the test timing out.
    const sink = await openSink(tag, { servers: `nats://127.0.0.1:${proxy.port}`, timeoutMs: LONGER_THAN_A_TEST_MS });
    await sink.connect(signal()); // idempotent: no second connection
    expect(proxy.accepted).toBe(1);
    await sink.write(events(5), signal());
    proxy.dropConnections();
    // An empty write only checks the connection: it tells when the client has seen the socket close.
    await until(
      () =>
        sink.write([], signal()).then(
          () => false,
          () => true,
        ),
      30_000,
      'the sink to see the drop',
    );
    await expect(sink.write(events(10), signal())).rejects.toBeInstanceOf(SinkUnavailableError);
    await sink.connect(signal());
    await sink.write(events(10), signal());
    expect((await jsm.streams.info(`CF_${tag}`)).state.messages).toBe(10);
    await sink.close();
    await sink.close();
  });

  it('gives up on a publish that is never acknowledged after timeoutMs, and drops the connection', async (ctx) => {
    if (skipReason) return ctx.skip();
    const tag = newTag();
    // A stream with no_ack stores messages but never answers: the sink must not wait forever.
    await addStream({ name: `CF_${tag}`, subjects: [`${tag}.>`], no_ack: true });
    const sink = await openSink(tag, { timeoutMs: 300, stream: { name: `CF_${tag}` } });
    // No upper bound on the wait: the test timeout catches a write that never gives up.
    const error = await rejectionOf(sink.write(events(3, 3), signal()));
    expect(error).toBeInstanceOf(SinkUnavailableError);
    expect(error.message).toMatch(/acknowledged none of 3 publishes within 300 ms/);
    await expect(sink.write(events(1), signal())).rejects.toThrow(/not connected/);
  });

  it('stops waiting for acknowledgements as soon as the write is aborted', async (ctx) => {
    if (skipReason) return ctx.skip();
    const tag = newTag();
    await addStream({ name: `CF_${tag}`, subjects: [`${tag}.>`], no_ack: true });
    // Only the abort can end this write before the test times out.
    const sink = await openSink(tag, { timeoutMs: LONGER_THAN_A_TEST_MS, stream: { name: `CF_${tag}` } });
    const controller = new AbortController();
    const writing = rejectionOf(sink.write(events(2, 2), controller.signal));
    // Aborted once both publishes (two objects: sent side by side) are stored and the sink waits
    // for acknowledgements that never come.
    await until(async () => (await jsm.streams.info(`CF_${tag}`)).state.messages === 2, 30_000, 'two stored');
    controller.abort();
    expect(await writing).toBeInstanceOf(AbortedError);
  });

  it('keeps credentials out of messages and error messages, and registers them as secrets', async (ctx) => {
    if (skipReason) return ctx.skip();
    const tag = newTag();
    // The shared server has no authorization: it accepts and ignores the credentials.
    const sink = await openSink(tag, { user: 'changefeed', password: PASSWORD, ceHeaders: true });
    await sink.write(events(3), signal());
    for (const m of await storedMessages(`CF_${tag}`))
      expect(`${m.subject}${m.string()}${JSON.stringify(headersOf(m))}`).not.toContain(PASSWORD);
    expect(scrubSecrets(`password=${PASSWORD}`)).toBe('password=[redacted]');
    new NatsSink(natsSinkConfigSchema.parse({ name: 'n', type: 'nats', token: TOKEN }));
    expect(scrubSecrets(TOKEN)).toBe('[redacted]');

    const down = new NatsSink(
      natsSinkConfigSchema.parse({
        name: 'n',
        type: 'nats',
        servers: `nats://127.0.0.1:${await freePort()}`,
        user: 'changefeed',
        password: PASSWORD,
      }),
    );
    const error = await rejectionOf(down.connect(signal()));
    expect(error).toBeInstanceOf(SinkUnavailableError);
    expect(`${error.message}${String(error.cause)}`).not.toContain(PASSWORD);
  });
});

/**
 * Servers with other settings than the shared one (authorization on, JetStream off), started from
 * the nats-server binary when it is installed here.
 */
describe('nats sink against servers it cannot use', () => {
  const servers: ChildProcess[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) {
      s.kill();
      if (s.exitCode === null) await once(s, 'exit');
    }
  });
  const start = async (ctx: { skip: (note?: string) => void }, args: string[]): Promise<string> => {
    const port = await freePort();
    const child = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    servers.push(child);
    const ready = await new Promise<boolean>((resolve) => {
      let log = '';
      child.once('error', () => resolve(false));
      child.stderr?.on('data', (chunk: Buffer) => {
        log += chunk.toString();
        if (log.includes('Server is ready')) resolve(true);
      });
    });
    if (!ready) ctx.skip('the nats-server binary is not installed');
    return `nats://127.0.0.1:${port}`;
  };

  it('rejected credentials: SinkUnavailableError without the password in it', async (ctx) => {
    const url = await start(ctx, ['--user', 'changefeed', '--pass', 'the-right-one']);
    const sink = new NatsSink(
      natsSinkConfigSchema.parse({ name: 'n', type: 'nats', servers: url, user: 'changefeed', password: PASSWORD }),
    );
    const error = await rejectionOf(sink.connect(signal()));
    expect(error).toBeInstanceOf(SinkUnavailableError);
    expect(error.message).toMatch(/authorization violation/i);
    expect(`${error.message}${String(error.cause)}`).not.toContain(PASSWORD);
  });

  it('JetStream off: SinkUnavailableError saying to enable it', async (ctx) => {
    const url = await start(ctx, []);
    const sink = new NatsSink(natsSinkConfigSchema.parse({ name: 'n', type: 'nats', servers: url, timeoutMs: 1_000 }));
    const error = await rejectionOf(sink.connect(signal()));
    expect(error).toBeInstanceOf(SinkUnavailableError);
    expect(error.message).toMatch(/JetStream is not enabled/);
    await sink.close();
  });
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
