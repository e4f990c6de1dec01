import {
  connect,
  IllegalOperationError,
  type ChannelModel,
  type ConfirmChannel,
  type Message,
  type Options,
} from 'amqplib';
import { z } from 'zod';
import { deliverySchema, RETRY_DEFAULTS, sinkCommonSchema } from '../deliver/deliveryConfig.js';
import { AbortedError } from '../errors.js';
import { registerSecret, scrubSecrets } from '../observe/secretRegistry.js';
import { certAndKeyTogether, clientCertFields, readTlsFiles } from '../tlsFiles.js';
import { templateSchema } from './eventTemplate.js';
import { routingKeyFor } from './rabbitmqRoutingKey.js';
import type { OutboundEvent, Sink } from './sink.js';
import { SinkBackoffError, SinkPartialFailureError, SinkUnavailableError, type ItemFailure } from './sinkErrors.js';

/** What `{placeholder}` in a routing-key template may stand for; see routingKey. */
export const ROUTING_KEY_PLACEHOLDERS = ['type', 'log', 'event', 'subject'] as const;

/** While the broker blocks the connection (resource alarm), writes are refused for this long. */
export const BLOCKED_RETRY_MS = 5_000;
/** close() waits this long for close-ok: a vanished broker never sends it. */
const CLOSE_GRACE_MS = 2_000;
const CONTENT_TYPE = 'application/cloudevents+json';
const CHANNEL_CLOSED = 'the channel was closed';

const urlSchema = z.url({ protocol: /^amqps?$/, message: 'must be an amqp:// or amqps:// URL' }).refine((text) => {
  const url = new URL(text);
  return url.username === '' && url.password === '' && url.search === '';
}, 'must carry neither credentials (set username and password) nor ?options (see heartbeatSeconds)');

const routingKeySchema = templateSchema(ROUTING_KEY_PLACEHOLDERS);

export const rabbitmqSinkConfigSchema = sinkCommonSchema
  .extend({
    type: z.literal('rabbitmq'),
    url: urlSchema
      .default('amqp://127.0.0.1:5672')
      .describe(
        'Broker address, `amqp://host:port/vhost` or `amqps://...`; the path is the vhost (`/` ' +
          'when absent, `%2F` for a literal slash).',
      ),
    username: z.string().min(1).optional().describe('User name, with `password`; `guest` when both are absent.'),
    password: z.string().min(1).optional().describe('Secret: password of `username`.'),
    exchange: z
      .object({
        name: z.string().min(1).max(255).describe('Exchange every event is published to.'),
        type: z
          .enum(['topic', 'direct', 'fanout'])
          .default('topic')
          .describe('Exchange type, used when the sink declares it.'),
        declare: z
          .boolean()
          .default(false)
          .describe(
            'Declare the exchange on every connect (an existing one must match type and durable). When ' +
              'false, a missing exchange is reported and nothing is sent.',
          ),
        durable: z.boolean().default(true).describe('Whether a declared exchange survives a broker restart.'),
      })
      .strict()
      .describe('Where messages go; queues are bound by the consumers, not by this sink.'),
    routingKey: routingKeySchema
      .default('{type}')
      .describe(
        'Routing key of each message. Placeholders: `{type}` the CloudEvent type ' +
          '(`<typePrefix>.<log>.<event>`), `{log}` career, skill or identity_provider, `{event}` the ' +
          'event name, `{subject}` the career or skill id (empty for the identity-provider log).',
      ),
    ceHeaders: z
      .boolean()
      .default(false)
      .describe(
        'Also put every CloudEvent attribute but `data` in a `cloudEvents:<name>` header (AMQP ' +
          'binding naming); the body is always the whole CloudEvent JSON.',
      ),
    mandatory: z
      .boolean()
      .default(false)
      .describe(
        'Publish as mandatory: a message no queue is bound for comes back and becomes a dead ' +
          'letter. When false, such messages are dropped by the broker and count as delivered.',
      ),
    heartbeatSeconds: z
      .number()
      .int()
      .min(0)
      .max(600)
      .default(30)
      .describe(
        'AMQP heartbeat: a silent connection is declared dead after about two intervals. 0 turns heartbeats off.',
      ),
    connectTimeoutMs: z
      .number()
      .int()
      .min(100)
      .max(120_000)
      .default(10_000)
      .describe('Limit on connecting: TCP, the AMQP handshake, opening the channel and checking the exchange.'),
    confirmTimeoutMs: z
      .number()
      .int()
      .min(100)
      .max(300_000)
      .default(15_000)
      .describe(
        'A batch not fully confirmed by the broker within this time fails and is sent again (a ' +
          'blocked or stuck broker must not hold a write forever).',
      ),
    caFile: z
      .string()
      .min(1)
      .optional()
      .describe('PEM file of CA certificates to trust with `amqps://`, for a broker with a private CA.'),
    ...clientCertFields,
    delivery: deliverySchema(RETRY_DEFAULTS),
  })
  .strict()
  .refine((c) => c.password === undefined || c.username !== undefined, {
    message: 'password needs username',
    path: ['password'],
  })
  .refine(...certAndKeyTogether);

export type RabbitmqSinkConfig = z.infer<typeof rabbitmqSinkConfigSchema>;

/**
 * One connection with its confirm channel, and the state amqplib's events report on them. Replaced
 * as a whole when either is lost: a new connection costs a round trip, and sharing nothing with a
 * dead one leaves no stale callbacks or half-closed channels to reason about.
 */
class BrokerSession {
  /** Aborted with the reason once the connection or channel is gone; in-flight writes listen to it. */
  readonly lost = new AbortController();
  private lostReason = '';
  private blockedReason: string | undefined;
  /** Ids the broker returned as unroutable (mandatory); basic.return precedes the message's ack. */
  readonly returned = new Set<string>();
  channel: ConfirmChannel | undefined;

  constructor(
    readonly model: ChannelModel,
    private readonly explain: (error: unknown) => string,
  ) {
    // An 'error' event without a listener would throw inside amqplib's socket handler and crash
    // the daemon, so these are attached before anything else can happen on the connection.
    model.on('error', (error: Error) => this.lose(explain(error)));
    model.on('close', (error?: Error) => this.lose(error ? explain(error) : 'the connection was closed'));
    model.on('blocked', (reason: string) => (this.blockedReason = reason || 'no reason given'));
    model.on('unblocked', () => (this.blockedReason = undefined));
  }

  /** Set by connection.blocked, cleared by connection.unblocked; a method as it changes during awaits. */
  blocked(): string | undefined {
    return this.blockedReason;
  }

  get reason(): string {
    return this.lostReason;
  }

  lose(reason: string): void {
    // amqplib closes the channels before the connection says why: a specific reason replaces that.
    if (!this.lost.signal.aborted || this.lostReason === CHANNEL_CLOSED) this.lostReason = reason;
    this.lost.abort();
  }

  async openChannel(): Promise<ConfirmChannel> {
    const channel = await this.model.createConfirmChannel();
    channel.on('error', (error: Error) => this.lose(this.explain(error)));
    channel.on('close', () => this.lose(CHANNEL_CLOSED));
    channel.on('return', (message: Message) => this.returned.add(String(message.properties.messageId)));
    this.channel = channel;
    return channel;
  }
}

/**
 * Publishes each event as one persistent message (`messageId` = event id) on a channel in confirm
 * mode: a batch counts as written only once the broker confirmed every message. A lost connection
 * fails the in-flight write and every later one with SinkUnavailableError until the engine calls
 * connect again. While the broker blocks the connection (memory or disk alarm) writes fail fast
 * with SinkBackoffError, and a write not confirmed within `confirmTimeoutMs` fails with
 * SinkUnavailableError: nothing hangs, and nothing unconfirmed counts as written.
 */
export class RabbitmqSink implements Sink {
  readonly type = 'rabbitmq';
  /**
   * One confirm channel carries every write; each message has its own confirm callback, so
   * concurrent writes are safe. Two batches in flight let the broker persist one while the next is
   * on the wire (confirms for durable queues wait for its fsync); more only widens what a broken
   * channel fails at once, since whatever breaks it fails every batch on it.
   */
  readonly limits = { maxBatchSize: 500, maxInFlight: 4, defaultInFlight: 2 };
  private session: BrokerSession | undefined;
  private readonly endpoint: string;
  private readonly vhost: string;
  private readonly connectOptions: Options.Connect;

  constructor(private readonly config: RabbitmqSinkConfig) {
    if (config.password !== undefined) registerSecret(config.password);
    const url = new URL(config.url);
    const protocol = url.protocol.slice(0, -1);
    const path = url.pathname.slice(1);
    this.vhost = path === '' ? '/' : decodeURIComponent(path);
    this.endpoint = `${protocol}://${url.host}/${path}`.replace(/\/$/, '');
    // Built from parts, never from a URL string: amqplib puts a URL it was given in some errors.
    this.connectOptions = {
      protocol,
      hostname: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port === '' ? (protocol === 'amqps' ? 5671 : 5672) : Number(url.port),
      vhost: path === '' ? undefined : path,
      username: config.username,
      password: config.password,
      heartbeat: config.heartbeatSeconds,
    };
  }

  get name(): string {
    return this.config.name;
  }

  async connect(signal: AbortSignal): Promise<void> {
    if (this.session && !this.session.lost.signal.aborted) return;
    if (this.session) void closeQuietly(this.session.model);
    this.session = undefined;
    const opening = this.open();
    const opened = await settleWithin(opening, this.config.connectTimeoutMs, [signal]);
    if (!opened) {
      void opening.then(
        (late) => closeQuietly(late.model),
        () => undefined,
      );
      if (signal.aborted) throw new AbortedError('connect aborted');
      throw new SinkUnavailableError(
        `no answer from RabbitMQ at ${this.endpoint} within connectTimeoutMs (${this.config.connectTimeoutMs} ms)`,
      );
    }
    this.session = opened.value;
  }

  async write(batch: readonly OutboundEvent[], signal: AbortSignal): Promise<void> {
    const session = this.session;
    const channel = session?.channel;
    if (!session || !channel || session.lost.signal.aborted) {
      throw new SinkUnavailableError(
        `not connected to RabbitMQ at ${this.endpoint}${session ? `: ${session.reason}` : ''}`,
      );
    }
    const blockedBefore = session.blocked();
    if (blockedBefore !== undefined) {
      const message =
        `RabbitMQ blocked publishing on this connection (${blockedBefore}), usually a memory ` +
        `or disk alarm: nothing was sent; trying again in ${BLOCKED_RETRY_MS / 1000} s`;
      throw new SinkBackoffError(message, BLOCKED_RETRY_MS);
    }
    let confirmed = 0;
    // Publishing only queues frames (amqplib buffers past its high-water mark rather than
    // dropping), so the whole batch goes out at once and the confirms arrive pipelined.
    const outcomes = batch.map((event) => this.publish(session, channel, event).finally(() => confirmed++));
    const settled = await settleWithin(Promise.all(outcomes), this.config.confirmTimeoutMs, [
      signal,
      session.lost.signal,
    ]);
    if (signal.aborted) throw new AbortedError('write aborted before RabbitMQ confirmed the batch; it stays pending');
    if (session.lost.signal.aborted) {
      throw new SinkUnavailableError(
        `lost the connection to RabbitMQ at ${this.endpoint} before every message was confirmed (${session.reason}); the batch will be sent again`,
      );
    }
    if (!settled) {
      // A blocked connection is kept: the broker confirms once the alarm clears, and until then
      // writes back off. Otherwise the connection is stuck or half-dead: replace it.
      const blocked = session.blocked();
      if (blocked === undefined) {
        session.lose(`no publisher confirm within ${this.config.confirmTimeoutMs} ms`);
        void closeQuietly(session.model);
      }
      const why =
        blocked === undefined
          ? '; reconnecting'
          : `: the connection is blocked (${blocked}), usually a memory or disk alarm`;
      throw new SinkUnavailableError(
        `RabbitMQ confirmed ${confirmed} of ${batch.length} messages within confirmTimeoutMs ` +
          `(${this.config.confirmTimeoutMs} ms)${why}; the batch will be sent again`,
      );
    }
    const failures = new Map<string, ItemFailure>();
    batch.forEach((event, i) => {
      const failure = settled.value[i];
      if (failure) failures.set(event.id, failure);
    });
    const [first] = failures.values();
    if (first)
      throw new SinkPartialFailureError(
        `${failures.size} of ${batch.length} messages not accepted by exchange "${this.config.exchange.name}": ${first.error}`,
        failures,
      );
  }

  async close(): Promise<void> {
    const session = this.session;
    this.session = undefined;
    if (!session) return;
    session.lose('the sink was closed');
    await closeQuietly(session.model);
  }

  /** Connects, opens the confirm channel and checks (or declares) the exchange. */
  private async open(): Promise<BrokerSession> {
    let session: BrokerSession | undefined;
    try {
      const connection_name = `skills-changefeed ${this.name}`;
      session = new BrokerSession(
        await connect(this.connectOptions, {
          timeout: this.config.connectTimeoutMs,
          noDelay: true,
          clientProperties: { connection_name },
          ...readTlsFiles(this.config),
        }),
        (e) => this.explain(e),
      );
      const channel = await session.openChannel();
      const { name, type, declare, durable } = this.config.exchange;
      if (declare) await channel.assertExchange(name, type, { durable });
      else await channel.checkExchange(name);
      return session;
    } catch (error) {
      if (session) void closeQuietly(session.model);
      // A channel error (404, 406) is reported on the channel before the RPC fails: prefer it.
      throw new SinkUnavailableError(session?.lost.signal.aborted ? session.reason : this.explain(error), {
        cause: error,
      });
    }
  }

  /** Resolves with undefined once the broker acked the message, or with why it did not take it. */
  private publish(
    session: BrokerSession,
    channel: ConfirmChannel,
    event: OutboundEvent,
  ): Promise<ItemFailure | undefined> {
    const routingKey = this.routingKey(event);
    const headers = this.config.ceHeaders ? ceHeaders(event.json) : undefined;
    const options: Options.Publish = {
      persistent: true,
      mandatory: this.config.mandatory,
      messageId: event.id,
      type: event.type,
      contentType: CONTENT_TYPE,
      appId: 'skills-changefeed',
      headers,
    };
    return new Promise((resolve) => {
      try {
        channel.publish(
          this.config.exchange.name,
          routingKey,
          Buffer.from(event.json, 'utf8'),
          options,
          (error: unknown) => {
            if (session.returned.delete(event.id)) {
              resolve({
                error: `unroutable: no queue is bound to exchange "${this.config.exchange.name}" for routing key "${routingKey}" (mandatory is set)`,
                permanent: true,
                status: 312,
              });
            } else if (error) {
              resolve({
                error:
                  'RabbitMQ nacked the message (a queue is full with x-overflow reject-publish, or the ' +
                  'broker failed to store it)',
                permanent: false,
              });
            } else resolve(undefined);
          },
        );
      } catch (error) {
        // A closed channel throws here (write() then reports the lost connection). Anything else
        // is about this event (a routing key over 255 bytes, say) and will not get better.
        if (error instanceof IllegalOperationError) session.lose(this.explain(error));
        resolve({ error: `cannot be published: ${this.explain(error)}`, permanent: true });
      }
    });
  }

  private routingKey(event: OutboundEvent): string {
    return routingKeyFor(this.config.routingKey, event);
  }

  /** An amqplib or socket error as an operator-facing sentence; never holds the password. */
  private explain(error: unknown): string {
    const password = this.config.password;
    // scrubSecrets ignores values under 4 characters; a short password is still cut out here.
    let text = scrubSecrets(error instanceof Error ? error.message : String(error));
    if (password) text = text.replaceAll(password, '[redacted]');
    const code = (error as { code?: unknown }).code;
    const { name, type, durable } = this.config.exchange;
    const exchange = `exchange "${name}" in vhost "${this.vhost}" at ${this.endpoint}`;
    if (code === 404 && /exchange/i.test(text))
      return `${exchange} does not exist: declare it on the broker, or set exchange.declare: true to let the sink declare it (${text})`;
    if (code === 406 && /exchange/i.test(text))
      return `${exchange} exists with other settings than type ${type}, durable ${durable}: make exchange.type and exchange.durable match it (${text})`;
    if (/^Handshake terminated by server: 403/.test(text))
      return `RabbitMQ at ${this.endpoint} refused the login: check username and password (${text})`;
    // The broker refuses connection.open for an unknown vhost; amqplib drops its reason text.
    if (/Expected ConnectionOpenOk; got <ConnectionClose/.test(text))
      return `RabbitMQ at ${this.endpoint} refused vhost "${this.vhost}": it does not exist, or the user may not use it`;
    if (code === 'ECONNREFUSED')
      return `cannot reach RabbitMQ at ${this.endpoint}: connection refused (is the broker running?)`;
    if (/ETIMEDOUT/.test(text))
      return `no answer from RabbitMQ at ${this.endpoint} within connectTimeoutMs (${this.config.connectTimeoutMs} ms)`;
    return `RabbitMQ at ${this.endpoint}: ${text}`;
  }
}

/** The structured-mode body stays whole; these copy its attributes (CloudEvents AMQP binding 3.2.3). */
function ceHeaders(json: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(JSON.parse(json) as Record<string, unknown>)) {
    if (
      name === 'data' ||
      name === 'data_base64' ||
      name === 'datacontenttype' ||
      value === undefined ||
      value === null
    )
      continue;
    headers[`cloudEvents:${name}`] = typeof value === 'string' ? value : JSON.stringify(value);
  }
  return headers;
}

/**
 * `promise`'s value, or undefined after `timeoutMs` or once one of `signals` aborts. The promise
 * keeps running; the timer and listeners go either way, since the signals may live for days.
 */
function settleWithin<T>(
  promise: Promise<T>,
  timeoutMs: number,
  signals: AbortSignal[],
): Promise<{ value: T } | undefined> {
  return new Promise((resolve, reject) => {
    const done = (): void => {
      clearTimeout(timer);
      for (const s of signals) s.removeEventListener('abort', stop);
    };
    const stop = (): void => {
      done();
      resolve(undefined);
    };
    const timer = setTimeout(stop, timeoutMs);
    for (const s of signals) s.addEventListener('abort', stop, { once: true });
    if (signals.some((s) => s.aborted)) stop();
    promise.then(
      (value) => (done(), resolve({ value })),
      (error: Error) => (done(), reject(error)),
    );
  });
}

async function closeQuietly(model: ChannelModel): Promise<void> {
  await settleWithin(model.close(), CLOSE_GRACE_MS, []).catch(() => undefined);
}
