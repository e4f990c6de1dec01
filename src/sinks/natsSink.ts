import { readTlsFiles } from '../tlsFiles.js';
import type * as JetStream from '@nats-io/jetstream';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type * as Transport from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import { AbortedError, describeError } from '../errors.js';
import { inlineOrFileSecret } from '../secrets/readSecretFile.js';
import { ceBinaryHeaders } from './cloudEventsHttp.js';
import type { OutboundEvent, Sink } from '../sinkContract/sink.js';
import { SinkPartialFailureError, SinkUnavailableError, type ItemFailure } from '../sinkContract/sinkErrors.js';
import { cannotConnect, ConnectionSlot, loadClientPackage, notConnected, type BrokerPeer } from './brokerConnection.js';
import { throwIfAborted, waitWithin } from './deadline.js';
import { escapeTemplateValue, renderTemplate, templateValues } from './eventTemplate.js';
import { streamSubjectsFor, type NatsSinkConfig } from './natsSinkConfig.js';
import { natsTlsOptions } from './natsTls.js';

/** The event's subject. Placeholder values are made into valid tokens, so any event renders to a valid subject. */
export function renderSubject(
  template: string,
  event: Pick<OutboundEvent, 'tenant' | 'type' | 'log' | 'objectId'>,
): string {
  // `{type}` spans several tokens: escape each, keep its dots.
  return renderTemplate(template, templateValues(event), (value, name) =>
    name === 'type' ? value.split('.').map(token).join('.') : token(value),
  );
}

/** A subject token built from event data keeps to the characters NATS recommends; the rest is %-escaped. */
function token(value: string): string {
  return escapeTemplateValue(value, /[^A-Za-z0-9_-]/);
}

/** The client's two packages, loaded by the first connect: a process without a NATS sink never loads them. */
interface NatsClient {
  transport: typeof Transport;
  jetstream: typeof JetStream;
}

async function loadNatsClient(): Promise<NatsClient> {
  return {
    transport: await loadClientPackage('@nats-io/transport-node', () => import('@nats-io/transport-node')),
    jetstream: await loadClientPackage('@nats-io/jetstream', () => import('@nats-io/jetstream')),
  };
}

interface NatsSession {
  nats: NatsClient;
  nc: NatsConnection;
  js: JetStreamClient;
}

/**
 * Publishes each event to JetStream with its id as `Nats-Msg-Id`, so the stream's duplicate window
 * drops re-sends, and counts a batch as written only once every publish is acknowledged (stored).
 */
export class NatsSink implements Sink {
  readonly type = 'nats';
  readonly name: string;
  // A write already publishes its objects concurrently; parallel writes help only batches of few
  // objects, and multiply what a lost connection leaves unacknowledged.
  readonly limits = { maxBatchSize: 500, maxInFlight: 4, defaultInFlight: 1 };
  private readonly connection = new ConnectionSlot<NatsSession>();
  private readonly servers: string[];
  private readonly peer: BrokerPeer;
  private readonly password: string | undefined;
  private readonly token: string | undefined;

  constructor(private readonly config: NatsSinkConfig) {
    this.name = config.name;
    this.servers = typeof config.servers === 'string' ? [config.servers] : config.servers;
    this.peer = { name: 'NATS', address: this.servers.join(', '), loginRefused: /authorization violation/i };
    this.password = inlineOrFileSecret(config.password, config.passwordFile);
    this.token = inlineOrFileSecret(config.token, config.tokenFile);
    // Checked at start; connect reads the files again, so a renewed certificate is picked up.
    readTlsFiles(config);
  }

  async connect(signal: AbortSignal): Promise<void> {
    const current = this.connection.current;
    if (current && !current.nc.isClosed()) return;
    if (current) this.connection.release(current);
    const { user, timeoutMs } = this.config;
    const { password, token } = this;
    const nats = await loadNatsClient();
    let nc: NatsConnection;
    try {
      nc = await nats.transport.connect({
        servers: this.servers,
        ...(user !== undefined ? { user, pass: password } : {}),
        ...(token !== undefined ? { token } : {}),
        ...(this.config.tls || this.config.caFile || this.config.certFile
          ? { tls: natsTlsOptions(this.config, this.servers) }
          : {}),
        name: `skills-changefeed/${this.name}`,
        timeout: timeoutMs,
        // The engine owns reconnects: with the client's own, publishes would queue up in a
        // disconnected client instead of failing fast, and a lost connection would go unreported.
        reconnect: false,
        // A peer that vanished without closing the socket is noticed within about a minute.
        pingInterval: 30_000,
        maxPingOut: 2,
        // Skips building an Error (a stack trace) for every publish.
        noAsyncTraces: true,
      });
    } catch (error) {
      throw cannotConnect(this.peer, describeError(error), error);
    }
    try {
      // Asks the server for the account's JetStream info: fails when JetStream is off.
      const jsm = await nats.jetstream.jetstreamManager(nc, { timeout: timeoutMs });
      await this.checkStream(nats, jsm);
      throwIfAborted(signal, `connect to NATS at ${this.peer.address}`);
    } catch (error) {
      await nc.close().catch(() => undefined);
      if (error instanceof SinkUnavailableError || error instanceof AbortedError) throw error;
      throw new SinkUnavailableError(`NATS at ${this.peer.address}: ${jetStreamMessage(nats, error)}`, {
        cause: error,
      });
    }
    this.connection.hold({ nats, nc, js: nats.jetstream.jetstream(nc, { timeout: timeoutMs }) });
  }

  async write(batch: readonly OutboundEvent[], signal: AbortSignal): Promise<void> {
    const connection = this.connection.current;
    if (!connection || connection.nc.isClosed()) {
      if (connection) this.connection.release(connection);
      throw notConnected(this.peer);
    }
    // Objects are published concurrently, each object's events one after another. Pipelining an
    // object's events would let a later event be stored while an earlier one is refused (full
    // stream, leader change): the engine re-sends both, in order, but the stream drops the later
    // one's re-send as a duplicate, leaving the object out of order for good.
    const failed: { event: OutboundEvent; error: unknown }[] = [];
    let acked = 0;
    const publishInOrder = async (events: OutboundEvent[]): Promise<void> => {
      for (const event of events) {
        if (signal.aborted) return;
        try {
          // A duplicate ack counts as success: the stream already holds the id.
          await connection.js.publish(renderSubject(this.config.subject, event), event.json, {
            msgID: event.id,
            timeout: this.config.timeoutMs,
            headers: this.headersOf(connection.nats, event),
          });
          acked++;
        } catch (error) {
          // The rest of this object's events stay unsent and unlisted: the engine holds back every
          // event behind a failed one of its object and sends it later, without counting an attempt.
          failed.push({ event, error });
          return;
        }
      }
    };
    await waitWithin(Promise.all([...groupByKey(batch).values()].map(publishInOrder)), {
      what: `write to NATS at ${this.peer.address}`,
      signal,
    });
    if (failed.length === 0) return;
    const errors = failed.map((f) => f.error);
    if (errors.some((error) => isConnectionLost(connection.nats, error)) || connection.nc.isClosed()) {
      await this.drop(connection);
      throw new SinkUnavailableError(
        `connection to NATS at ${this.peer.address} lost with ${batch.length - acked} of ${batch.length} events unacknowledged`,
      );
    }
    const noStream = failed.find((f) => isNoResponders(f.error));
    if (noStream) {
      throw new SinkUnavailableError(
        `no JetStream stream captures subject ${renderSubject(this.config.subject, noStream.event)}: ` +
          `create a stream for it, or set stream.create: true (with stream.name) so the sink ` +
          `creates one`,
      );
    }
    if (acked === 0 && errors.every((e) => e instanceof connection.nats.transport.errors.TimeoutError)) {
      // Not one ack came back: a connection that delivers nothing is as good as lost. Dropping it
      // makes the engine reconnect instead of retrying into a dead socket.
      await this.drop(connection);
      throw new SinkUnavailableError(
        `NATS at ${this.peer.address} acknowledged none of ${failed.length} publishes within ${this.config.timeoutMs} ms; reconnecting`,
      );
    }
    const failures = new Map(
      failed.map((f) => [f.event.id, itemFailure(connection.nats, f.error, this.config.timeoutMs)]),
    );
    const [first] = failures.values();
    const heldBack = batch.length - acked - failed.length;
    const heldBackNote = heldBack > 0 ? ` (${heldBack} later events of their objects held back)` : '';
    throw new SinkPartialFailureError(
      `${failed.length} of ${batch.length} events refused or not acknowledged by JetStream${heldBackNote}: ` +
        `${first?.error ?? 'failed'}`,
      failures,
    );
  }

  async close(): Promise<void> {
    await this.connection
      .take()
      ?.nc.close()
      .catch(() => undefined);
  }

  /** Closes the connection a write used; a write holding an older connection cannot close a newer one. */
  private async drop(connection: NatsSession): Promise<void> {
    this.connection.release(connection);
    await connection.nc.close().catch(() => undefined);
  }

  private async checkStream(nats: NatsClient, jsm: JetStreamManager): Promise<void> {
    const stream = this.config.stream;
    if (!stream) return;
    try {
      await jsm.streams.info(stream.name);
      return;
    } catch (error) {
      if (!isStreamNotFound(nats, error)) throw error;
    }
    const subjects = stream.subjects ?? streamSubjectsFor(this.config.subject);
    if (!stream.create) {
      throw new SinkUnavailableError(
        `JetStream stream ${stream.name} does not exist: create it with subjects ${subjects.join(', ')}, or set stream.create: true`,
      );
    }
    // Concurrent creators of an identical stream all succeed: adding an existing stream with the same config is a no-op.
    await jsm.streams.add({
      name: stream.name,
      subjects,
      duplicate_window: nats.transport.nanos(stream.duplicateWindowSeconds * 1000),
    });
  }

  private headersOf(nats: NatsClient, event: OutboundEvent) {
    const h = nats.transport.headers();
    h.set('content-type', 'application/cloudevents+json');
    if (this.config.ceHeaders) {
      for (const [name, value] of Object.entries(ceBinaryHeaders(JSON.parse(event.json) as Record<string, unknown>)))
        h.set(name, value);
    }
    return h;
  }
}

function groupByKey(batch: readonly OutboundEvent[]): Map<string, OutboundEvent[]> {
  const byKey = new Map<string, OutboundEvent[]>();
  for (const event of batch) {
    const events = byKey.get(event.orderingKey);
    if (events) events.push(event);
    else byKey.set(event.orderingKey, [event]);
  }
  return byKey;
}

function itemFailure({ transport, jetstream }: NatsClient, error: unknown, timeoutMs: number): ItemFailure {
  if (error instanceof transport.errors.TimeoutError)
    return { error: `no acknowledgement within ${timeoutMs} ms`, permanent: false };
  // The stream refused this message for good (too large, wrong stream): 4xx; 503 is a full stream or a leader election.
  if (error instanceof jetstream.JetStreamApiError)
    return { error: `JetStream ${error.code}: ${error.message}`, permanent: error.status < 500, status: error.status };
  // The client refuses a payload over the server's max_payload before sending it.
  if (error instanceof transport.errors.InvalidArgumentError) return { error: error.message, permanent: true };
  return { error: describeError(error), permanent: false };
}

/** The client turns "no one listens on this subject" into JetStreamNotEnabled; after connect proved JetStream on, it means no stream. */
function isNoResponders(error: unknown): boolean {
  return error instanceof Error && error.name === 'JetStreamNotEnabled';
}

/** Pending requests fail with a RequestError when the connection closes, before isClosed() turns true. */
function isConnectionLost({ transport }: NatsClient, error: unknown): boolean {
  return (
    error instanceof transport.errors.ClosedConnectionError ||
    (error instanceof transport.errors.RequestError && !error.isNoResponders())
  );
}

function isStreamNotFound({ jetstream }: NatsClient, error: unknown): boolean {
  return error instanceof jetstream.JetStreamApiError && error.code === jetstream.JetStreamApiCodes.StreamNotFound;
}

function jetStreamMessage({ jetstream }: NatsClient, error: unknown): string {
  if (
    isNoResponders(error) ||
    (error instanceof jetstream.JetStreamApiError &&
      error.code === jetstream.JetStreamApiCodes.JetStreamNotEnabledForAccount)
  ) {
    return 'JetStream is not enabled (start the server with -js, or enable it for this account)';
  }
  return describeError(error);
}
