import type { Redis, RedisOptions } from 'ioredis';
import { AbortedError } from '../errors.js';
import { readTlsFiles } from '../tlsFiles.js';
import { inlineOrFileSecret } from '../secrets/readSecretFile.js';
import { scrubSecrets } from '../secrets/secretRegistry.js';
import type { OutboundEvent, Sink } from '../sinkContract/sink.js';
import { SinkUnavailableError, throwIfAnyFailed, type ItemFailure } from '../sinkContract/sinkErrors.js';
import { cannotConnect, ConnectionSlot, loadClientPackage, notConnected, type BrokerPeer } from './brokerConnection.js';
import { throwIfAborted, waitWithin } from './deadline.js';
import { escapeTemplateValue, renderTemplate, templateValues } from './eventTemplate.js';
import type { RedisStreamsSinkConfig } from './redisStreamsSinkConfig.js';

/**
 * Server replies that say this server cannot take writes right now (a replica after a failover,
 * still loading, a script hogging it), rather than that one event is wrong: reconnect and back off
 * instead of burning the events' attempts. A reconnect also re-resolves the host after a failover.
 */
const SERVER_NOT_WRITABLE = /^(READONLY|LOADING|MASTERDOWN|BUSY)\b/;

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const KEY_FORBIDDEN = /[\u0000-\u001f\u007f-\u009f]/;

export function renderKey(
  config: Pick<RedisStreamsSinkConfig, 'key' | 'prefix'>,
  event: Pick<OutboundEvent, 'tenant' | 'type' | 'log' | 'objectId'>,
): string {
  // Keys are binary-safe, but control characters in them break every tool that shows them.
  return renderTemplate(config.key, templateValues(event, config.prefix), (value, name) =>
    name === 'prefix' ? value : escapeTemplateValue(value, KEY_FORBIDDEN),
  );
}

/** The entry's fields (docs/sinks.md): attribute copies, so consumers route and deduplicate without parsing `event`. */
export function streamFields(event: OutboundEvent): string[] {
  const ce = JSON.parse(event.json) as { source?: string; subject?: string; time?: string };
  const fields = {
    id: event.id,
    tenant: event.tenant,
    type: event.type,
    source: ce.source ?? '',
    subject: ce.subject ?? '',
    time: ce.time ?? '',
    event: event.json,
  };
  return Object.entries(fields).flat();
}

interface Connection {
  client: Redis;
  /** Last error the client reported (connection refused, reset, WRONGPASS): the reason a command failed. */
  lastError?: string;
}

/**
 * Adds each event to a Redis stream with `XADD`, one pipeline per batch: one round trip, and a
 * reply per event, so a refused event fails alone. Commands on one connection run in order, so
 * events of one object that share a stream key land in seq order.
 *
 * Redis does not deduplicate: an event re-sent after a lost connection is a second entry.
 * Consumers deduplicate on the `id` field.
 */
export class RedisStreamsSink implements Sink {
  readonly type = 'redis-streams';
  readonly name: string;
  // 1,000 XADDs of ~1 KB is about 1 MB per round trip: single-threaded Redis answers it within
  // milliseconds without stalling other clients. Writes share one connection, so more in flight
  // only overlap the engine's bookkeeping with the round trip.
  readonly limits = { maxBatchSize: 1000, maxInFlight: 4, defaultInFlight: 2 };
  private readonly connection = new ConnectionSlot<Connection>();
  private readonly options: RedisOptions;
  private readonly trim: string[];
  private readonly peer: BrokerPeer;

  constructor(private readonly config: RedisStreamsSinkConfig) {
    this.name = config.name;
    const password = inlineOrFileSecret(config.password, config.passwordFile);
    const url = new URL(config.url);
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1';
    const port = Number(url.port || 6379);
    const db = Number(url.pathname.slice(1) || 0);
    const tls = config.tls || url.protocol === 'rediss:';
    this.peer = {
      name: 'Redis',
      address: `${url.protocol}//${url.host}/${db}`,
      loginRefused: /WRONGPASS|NOAUTH|NOPERM/,
    };
    this.trim = config.maxLen === undefined ? [] : ['MAXLEN', '~', String(config.maxLen)];
    this.options = {
      host,
      port,
      db,
      username: config.username,
      password,
      // Node checks the certificate against `host` (and sends it as SNI) unless told otherwise.
      tls: tls ? readTlsFiles(config) : undefined,
      connectionName: `changefeed-${config.name}`,
      connectTimeout: config.connectTimeoutMs,
      // Connect only when the engine says so, and never reconnect on our own: the engine owns
      // reconnect backoff. Without an offline queue, a command while disconnected fails at once
      // instead of waiting for a connection that may never come; without resending, a command
      // cut off by a lost connection fails rather than being sent again behind the engine's back.
      lazyConnect: true,
      retryStrategy: () => null,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      autoResendUnfulfilledCommands: false,
      // The ready check needs INFO, which a least-privilege user (`+xadd` only) may not run; a
      // server still loading answers XADD with LOADING, which counts as unavailable anyway.
      enableReadyCheck: false,
    };
  }

  async connect(signal: AbortSignal): Promise<void> {
    const current = this.connection.current;
    if (current?.client.status === 'ready') return;
    if (current) this.drop(current);
    const { Redis } = await loadClientPackage('ioredis', () => import('ioredis'));
    const client = new Redis(this.options);
    const connection: Connection = { client };
    // Errors reach us through the commands; this listener keeps the reason for the message and
    // stops an 'error' event without listeners from crashing the process.
    client.on('error', (error: Error) => {
      connection.lastError = scrubSecrets(error.message);
    });
    try {
      // ioredis bounds only the TCP connect; a server that accepts and then stays silent would
      // keep its handshake (HELLO, ready check) waiting forever.
      await waitWithin(client.connect(), {
        what: `connect to Redis at ${this.peer.address}`,
        signal,
        timeoutMs: this.config.connectTimeoutMs,
        onTimeout: () => new Error(`not ready within ${this.config.connectTimeoutMs} ms`),
      });
    } catch (error) {
      client.disconnect();
      if (error instanceof AbortedError) throw error;
      throw cannotConnect(this.peer, connection.lastError ?? (error as Error).message);
    }
    this.connection.hold(connection);
  }

  async write(batch: readonly OutboundEvent[], signal: AbortSignal): Promise<void> {
    const connection = this.connection.current;
    if (connection?.client.status !== 'ready') throw notConnected(this.peer, connection?.lastError);
    throwIfAborted(signal, `write to Redis at ${this.peer.address}`);
    const keys = batch.map((event) => renderKey(this.config, event));
    const pipeline = connection.client.pipeline();
    batch.forEach((event, i) => pipeline.xadd(keys[i] as string, ...this.trim, '*', ...streamFields(event)));
    const replies = await this.execute(connection, pipeline.exec(), signal);

    const failures = new Map<string, ItemFailure>();
    let lost: string | undefined = replies.length === batch.length ? undefined : 'incomplete reply';
    replies.forEach(([error], i) => {
      if (!error) return;
      // A ReplyError is Redis refusing this command; anything else ("Connection is closed.") is
      // the connection failing under it, and says nothing about whether Redis applied it.
      if (error.name !== 'ReplyError' || SERVER_NOT_WRITABLE.test(error.message)) {
        lost ??= connection.lastError ?? error.message;
        return;
      }
      const event = batch[i] as OutboundEvent;
      // Transient: what makes Redis refuse an XADD (a key of another type, OOM, an ACL rule) is
      // for an operator to fix, after which the event goes through; retry.maxAttempts and
      // retry.maxAgeSeconds decide when to give up.
      failures.set(event.id, { error: `XADD ${keys[i]}: ${scrubSecrets(error.message)}`, permanent: false });
    });
    if (lost !== undefined) {
      // Some entries may have been added: the engine sends the whole batch again (duplicates).
      this.drop(connection);
      throw new SinkUnavailableError(
        `connection to Redis at ${this.peer.address} failed during a batch of ${batch.length}: ${scrubSecrets(lost)}`,
      );
    }
    throwIfAnyFailed(failures, batch.length, `Redis at ${this.peer.address}`);
  }

  close(): Promise<void> {
    const connection = this.connection.take();
    if (connection) this.drop(connection);
    return Promise.resolve();
  }

  /** The pipeline's replies; a lost connection, a timeout or an abort reject instead. */
  private async execute(
    connection: Connection,
    exec: Promise<[Error | null, unknown][] | null>,
    signal: AbortSignal,
  ): Promise<[Error | null, unknown][]> {
    const timeoutMs = this.config.timeoutMs;
    try {
      const replies = await waitWithin(exec, {
        what: `write to Redis at ${this.peer.address}`,
        signal,
        timeoutMs,
        onTimeout: () =>
          new SinkUnavailableError(`Redis at ${this.peer.address} did not answer a batch within ${timeoutMs} ms`),
      });
      return replies ?? [];
    } catch (error) {
      if (error instanceof AbortedError) throw error;
      // Timed out (the replies may still come, or never) or failed: start afresh on a new connection.
      this.drop(connection);
      if (error instanceof SinkUnavailableError) throw error;
      throw new SinkUnavailableError(
        `connection to Redis at ${this.peer.address} failed: ${scrubSecrets(connection.lastError ?? (error as Error).message)}`,
      );
    }
  }

  /** Closes `connection`; a write still holding an older connection cannot close a newer one. */
  private drop(connection: Connection): void {
    this.connection.release(connection);
    connection.client.disconnect();
  }
}
