import type * as Amqplib from 'amqplib';
import type { ChannelModel, ConfirmChannel, Message, Options } from 'amqplib';
import { inlineOrFileSecret } from '../secrets/readSecretFile.js';
import { scrubSecrets } from '../secrets/secretRegistry.js';
import { readTlsFiles } from '../tlsFiles.js';
import type { OutboundEvent, Sink } from '../sinkContract/sink.js';
import {
  SinkBackoffError,
  SinkUnavailableError,
  throwIfAnyFailed,
  type ItemFailure,
} from '../sinkContract/sinkErrors.js';
import { ceAttributes } from './cloudEventsHttp.js';
import { cannotConnect, ConnectionSlot, loadClientPackage, notConnected, type BrokerPeer } from './brokerConnection.js';
import { abortedError, settleWithin, waitWithin } from './deadline.js';
import { routingKeyFor } from './rabbitmqRoutingKey.js';
import type { RabbitmqSinkConfig } from './rabbitmqSinkConfig.js';

/** While the broker blocks the connection (resource alarm), writes are refused for this long. */
export const BLOCKED_RETRY_MS = 5_000;
const CONTENT_TYPE = 'application/cloudevents+json';
/** close() waits this long for close-ok: a vanished broker never sends it. */
const CLOSE_GRACE_MS = 2_000;
const CHANNEL_CLOSED = 'the channel was closed';

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
  readonly name: string;
  // One confirm channel carries every write (each message has its own confirm callback). Two
  // batches in flight let the broker fsync one while the next is on the wire; more only widen what
  // a broken channel fails at once.
  readonly limits = { maxBatchSize: 500, maxInFlight: 4, defaultInFlight: 2 };
  private readonly session = new ConnectionSlot<RabbitmqSession>();
  private readonly peer: BrokerPeer;
  private readonly vhost: string;
  private readonly connectOptions: Options.Connect;
  private readonly password: string | undefined;

  constructor(private readonly config: RabbitmqSinkConfig) {
    this.name = config.name;
    this.password = inlineOrFileSecret(config.password, config.passwordFile);
    // Checked at start; connect reads the files again, so a renewed certificate is picked up.
    readTlsFiles(config);
    const url = new URL(config.url);
    const protocol = url.protocol.slice(0, -1);
    const path = url.pathname.slice(1);
    this.vhost = path === '' ? '/' : decodeURIComponent(path);
    this.peer = {
      name: 'RabbitMQ',
      address: `${protocol}://${url.host}/${path}`.replace(/\/$/, ''),
      loginRefused: /^Handshake terminated by server: 403/,
    };
    // Built from parts, never from a URL string: amqplib puts a URL it was given in some errors.
    this.connectOptions = {
      protocol,
      hostname: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port === '' ? (protocol === 'amqps' ? 5671 : 5672) : Number(url.port),
      vhost: path === '' ? undefined : path,
      username: config.username,
      password: this.password,
      heartbeat: config.heartbeatSeconds,
    };
  }

  async connect(signal: AbortSignal): Promise<void> {
    const current = this.session.current;
    if (current && !current.lost.signal.aborted) return;
    if (current) {
      this.session.release(current);
      closeQuietly(current.model).catch(() => undefined);
    }
    const { connectTimeoutMs } = this.config;
    const opening = this.open();
    try {
      const session = await waitWithin(opening, {
        what: `connect to RabbitMQ at ${this.peer.address}`,
        signal,
        timeoutMs: connectTimeoutMs,
        onTimeout: () => cannotConnect(this.peer, `no answer within connectTimeoutMs (${connectTimeoutMs} ms)`),
      });
      this.session.hold(session);
    } catch (error) {
      // A connection that opens after all is closed as soon as it does.
      opening.then((late) => closeQuietly(late.model)).catch(() => undefined);
      throw error;
    }
  }

  async write(batch: readonly OutboundEvent[], signal: AbortSignal): Promise<void> {
    const session = this.session.current;
    const channel = session?.channel;
    if (!session || !channel || session.lost.signal.aborted) throw notConnected(this.peer, session?.reason);
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
    const settled = await settleWithin(Promise.all(outcomes), {
      timeoutMs: this.config.confirmTimeoutMs,
      signals: [signal, session.lost.signal],
    });
    if (signal.aborted) throw abortedError(`write to RabbitMQ at ${this.peer.address}`);
    if (session.lost.signal.aborted) {
      throw new SinkUnavailableError(
        `lost the connection to RabbitMQ at ${this.peer.address} before every message was confirmed (${session.reason}); the batch will be sent again`,
      );
    }
    if (!settled) {
      // A blocked connection is kept: the broker confirms once the alarm clears, and until then
      // writes back off. Otherwise the connection is stuck or half-dead: replace it.
      const blocked = session.blocked();
      if (blocked === undefined) {
        session.lose(`no publisher confirm within ${this.config.confirmTimeoutMs} ms`);
        closeQuietly(session.model).catch(() => undefined);
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
    throwIfAnyFailed(failures, batch.length, `RabbitMQ exchange "${this.config.exchange.name}"`);
  }

  async close(): Promise<void> {
    const session = this.session.take();
    if (!session) return;
    session.lose('the sink was closed');
    await closeQuietly(session.model);
  }

  /** Connects, opens the confirm channel and checks (or declares) the exchange. */
  private async open(): Promise<RabbitmqSession> {
    let session: RabbitmqSession | undefined;
    try {
      const connection_name = `skills-changefeed ${this.name}`;
      const amqplib = await loadClientPackage('amqplib', () => import('amqplib'));
      session = new RabbitmqSession(
        amqplib,
        await amqplib.connect(this.connectOptions, {
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
      if (session) closeQuietly(session.model).catch(() => undefined);
      // A channel error (404, 406) is reported on the channel before the RPC fails: prefer it.
      throw cannotConnect(this.peer, session?.lost.signal.aborted ? session.reason : this.explain(error), error);
    }
  }

  /** Resolves with undefined once the broker acked the message, or with why it did not take it. */
  private publish(
    session: RabbitmqSession,
    channel: ConfirmChannel,
    event: OutboundEvent,
  ): Promise<ItemFailure | undefined> {
    const routingKey = routingKeyFor(this.config.routingKey, event);
    // The structured-mode body stays whole; the headers copy its attributes (CloudEvents AMQP binding 3.2.3).
    const headers = this.config.ceHeaders
      ? Object.fromEntries(
          ceAttributes(JSON.parse(event.json) as Record<string, unknown>).map(([name, value]) => [
            `cloudEvents:${name}`,
            value,
          ]),
        )
      : undefined;
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
        if (error instanceof session.amqplib.IllegalOperationError) session.lose(this.explain(error));
        resolve({ error: `cannot be published: ${this.explain(error)}`, permanent: true });
      }
    });
  }

  /**
   * An amqplib or socket error as the reason part of an operator-facing message (callers name the
   * broker: "cannot connect to RabbitMQ at ...: <reason>"); never holds the password.
   */
  private explain(error: unknown): string {
    const password = this.password;
    // scrubSecrets ignores values under 4 characters; a short password is still cut out here.
    let text = scrubSecrets(error instanceof Error ? error.message : String(error));
    if (password) text = text.replaceAll(password, '[redacted]');
    const code = (error as { code?: unknown }).code;
    const { name, type, durable } = this.config.exchange;
    const exchange = `exchange "${name}" in vhost "${this.vhost}" at ${this.peer.address}`;
    if (code === 404 && /exchange/i.test(text))
      return `${exchange} does not exist: declare it on the broker, or set exchange.declare: true to let the sink declare it (${text})`;
    if (code === 406 && /exchange/i.test(text))
      return `${exchange} exists with other settings than type ${type}, durable ${durable}: make exchange.type and exchange.durable match it (${text})`;
    // The broker refuses connection.open for an unknown vhost; amqplib drops its reason text.
    if (/Expected ConnectionOpenOk; got <ConnectionClose/.test(text))
      return `vhost "${this.vhost}" refused: it does not exist, or the user may not use it`;
    if (code === 'ECONNREFUSED') return 'connection refused (is the broker running?)';
    if (/ETIMEDOUT/.test(text)) return `no answer within connectTimeoutMs (${this.config.connectTimeoutMs} ms)`;
    return text;
  }
}

/**
 * One connection with its confirm channel, and the state amqplib's events report on them. Replaced
 * as a whole when either is lost: a new connection costs a round trip, and sharing nothing with a
 * dead one leaves no stale callbacks or half-closed channels to reason about.
 */
export class RabbitmqSession {
  /** Aborted with the reason once the connection or channel is gone; in-flight writes listen to it. */
  readonly lost = new AbortController();
  private lostReason = '';
  private blockedReason: string | undefined;
  /** Ids the broker returned as unroutable (mandatory); basic.return precedes the message's ack. */
  readonly returned = new Set<string>();
  channel: ConfirmChannel | undefined;

  constructor(
    /** The package the connection came from, for its error classes. */
    readonly amqplib: typeof Amqplib,
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

/** Closes the connection, waiting at most CLOSE_GRACE_MS for the broker's close-ok; never throws. */
export async function closeQuietly(model: ChannelModel): Promise<void> {
  await settleWithin(model.close(), { timeoutMs: CLOSE_GRACE_MS }).catch(() => undefined);
}
