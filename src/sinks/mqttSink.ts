import type * as Mqtt from 'mqtt';
import type { IClientOptions, IClientPublishOptions, MqttClient } from 'mqtt';
import { AbortedError } from '../errors.js';
import { readTlsFiles } from '../tlsFiles.js';
import { inlineOrFileSecret } from '../secrets/readSecretFile.js';
import { scrubSecrets } from '../secrets/secretRegistry.js';
import type { OutboundEvent, Sink } from '../sinkContract/sink.js';
import { SinkUnavailableError, throwIfAnyFailed, type ItemFailure } from '../sinkContract/sinkErrors.js';
import { ceAttributes } from './cloudEventsHttp.js';
import { cannotConnect, ConnectionSlot, loadClientPackage, notConnected, type BrokerPeer } from './brokerConnection.js';
import { settleWithin, throwIfAborted, waitWithin } from './deadline.js';
import { escapeTemplateValue, renderTemplate, templateValues } from './eventTemplate.js';
import type { MqttSinkConfig } from './mqttSinkConfig.js';

/** PUBACK reason codes about the event itself (topic, size, payload); other refusals are for an operator to fix, and retried. */
const PERMANENT_REASONS = new Set([0x90, 0x95, 0x99]);

const reasonName = (mqtt: typeof Mqtt, code: number): string =>
  (mqtt.ReasonCodes as Record<number, string | undefined>)[code] ?? `reason code ${code}`;

/** What a topic level built from event data may not hold: separators, wildcards and the control characters MQTT forbids or discourages (MQTT 5 1.5.4, 4.7). */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const TOPIC_LEVEL_FORBIDDEN = /[/+#\u0000-\u001f\u007f-\u009f\ufffe\uffff]/;

/** The event's topic. Placeholder values cannot add levels or wildcards. */
export function renderTopic(
  config: Pick<MqttSinkConfig, 'topic' | 'prefix'>,
  event: Pick<OutboundEvent, 'tenant' | 'type' | 'log' | 'objectId'>,
): string {
  // The prefix is the operator's own and may hold levels; event values may not.
  return renderTemplate(config.topic, templateValues(event, config.prefix), (value, name) =>
    name === 'prefix' || name === 'log' ? value : escapeTemplateValue(value, TOPIC_LEVEL_FORBIDDEN),
  );
}

interface Connection {
  /** The package the client came from, for its reason code names. */
  mqtt: typeof Mqtt;
  client: MqttClient;
  /** Why the connection failed or closed, for messages. */
  lastError?: string;
  /** Writes waiting for PUBACKs: a lost connection fails them (mqtt.js would keep them waiting). */
  readonly waiting: Set<(error: SinkUnavailableError) => void>;
  onClose?: () => void;
}

/**
 * Publishes each event at QoS 1 and counts a batch as written once every PUBACK arrived. The
 * payload is the CloudEvent JSON. The session is persistent (`clean: false`, a stable client id),
 * but delivery does not lean on it: after a lost connection the engine sends the unacknowledged
 * batch again, so consumers may see duplicates and deduplicate on the event id.
 */
export class MqttSink implements Sink {
  readonly type = 'mqtt';
  readonly name: string;
  // A batch's publishes are already pipelined up to the broker's Receive Maximum, which parallel
  // writes would have to share. 200 events bound what a lost connection sends twice.
  readonly limits = { maxBatchSize: 200, maxInFlight: 1 };
  private readonly connection = new ConnectionSlot<Connection>();
  private readonly options: IClientOptions;
  private readonly publishOptions: IClientPublishOptions;
  private readonly peer: BrokerPeer;

  constructor(private readonly config: MqttSinkConfig) {
    this.name = config.name;
    const password = inlineOrFileSecret(config.password, config.passwordFile);
    const url = new URL(config.url);
    // Not url.origin: that is "null" for schemes the URL standard does not know, such as mqtt:.
    this.peer = {
      name: 'the MQTT broker',
      address: `${url.protocol}//${url.host}`,
      loginRefused: /username or password|not authorized/i,
    };
    const v5 = config.protocolVersion === 5;
    this.options = {
      protocolVersion: config.protocolVersion,
      clientId: config.clientId ?? `changefeed-${config.name}`,
      clean: false,
      // Without an expiry an MQTT 5 session ends with its connection: not persistent at all.
      properties: v5 ? { sessionExpiryInterval: config.sessionExpirySeconds } : undefined,
      username: config.username,
      password,
      connectTimeout: config.connectTimeoutMs,
      // The engine owns reconnecting (with backoff, and knowing what is unacknowledged).
      reconnectPeriod: 0,
      manualConnect: true,
      ...readTlsFiles(config),
    };
    this.publishOptions = {
      qos: 1,
      retain: config.retain,
      ...(v5 ? { properties: { contentType: 'application/cloudevents+json', payloadFormatIndicator: true } } : {}),
    };
  }

  async connect(signal: AbortSignal): Promise<void> {
    const current = this.connection.current;
    if (current?.client.connected) return;
    if (current) this.drop(current, 'reconnecting');
    const what = `connect to the MQTT broker at ${this.peer.address}`;
    const mqtt = await loadClientPackage('mqtt', () => import('mqtt'));
    throwIfAborted(signal, what);
    const client = mqtt.connect(this.config.url, this.options);
    const connection: Connection = { mqtt, client, waiting: new Set() };
    client.on('error', (error) => {
      connection.lastError = scrubSecrets(error.message);
    });
    client.on('disconnect', (packet) => {
      connection.lastError = `the broker disconnected: ${reasonName(mqtt, packet.reasonCode ?? 0)}`;
    });
    let onConnect: (() => void) | undefined;
    let onClose: (() => void) | undefined;
    const connected = new Promise<void>((resolve, reject) => {
      onConnect = resolve;
      // Refused, timed out (no CONNACK, after connectTimeoutMs) or rejected (bad credentials): each ends in 'close'.
      onClose = () => reject(new Error(connection.lastError ?? 'connection closed'));
      client.once('connect', onConnect).once('close', onClose);
      client.connect();
    });
    try {
      await waitWithin(connected, { what, signal });
    } catch (error) {
      client.end(true);
      if (error instanceof AbortedError) throw error;
      throw cannotConnect(this.peer, (error as Error).message);
    } finally {
      client.removeListener('connect', onConnect as () => void).removeListener('close', onClose as () => void);
    }
    connection.onClose = () =>
      this.drop(
        connection,
        `connection to the MQTT broker at ${this.peer.address} lost${connection.lastError ? `: ${connection.lastError}` : ''}`,
      );
    client.on('close', connection.onClose);
    this.connection.hold(connection);
  }

  async write(batch: readonly OutboundEvent[], signal: AbortSignal): Promise<void> {
    const connection = this.connection.current;
    // mqtt.js would queue a publish until a reconnect that never comes (reconnectPeriod 0).
    if (!connection?.client.connected) throw notConnected(this.peer, connection?.lastError);
    const what = `write to the MQTT broker at ${this.peer.address}`;
    throwIfAborted(signal, what);
    const publishing = this.publishAll(connection, batch);
    let failures: Map<string, ItemFailure>;
    try {
      failures = await waitWithin(publishing.acknowledged, { what, signal });
    } finally {
      publishing.stop();
    }
    throwIfAnyFailed(failures, batch.length, `the MQTT broker at ${this.peer.address}`);
  }

  async close(): Promise<void> {
    const connection = this.connection.take();
    if (!connection) return;
    if (connection.onClose) connection.client.removeListener('close', connection.onClose);
    for (const fail of connection.waiting) fail(new SinkUnavailableError(`the MQTT sink ${this.name} was closed`));
    // A DISCONNECT tells the broker this was no failure; a broker that does not answer gets 1 s.
    const disconnected = new Promise<void>((resolve) => connection.client.end(false, {}, () => resolve()));
    await settleWithin(disconnected, { timeoutMs: 1_000 });
    connection.client.end(true);
  }

  /**
   * Publishes the batch in order, keeping at most the broker's Receive Maximum unacknowledged (an
   * MQTT 5 rule mqtt.js leaves to us). `acknowledged` resolves with the refused events once every
   * PUBACK arrived, and rejects when the connection is lost or no PUBACK comes within timeoutMs.
   * `stop` publishes nothing more and stops watching (the caller gave up, or it is done).
   */
  private publishAll(
    connection: Connection,
    batch: readonly OutboundEvent[],
  ): { acknowledged: Promise<Map<string, ItemFailure>>; stop: () => void } {
    const { client } = connection;
    const window = client.serverProperties?.receiveMaximum ?? batch.length;
    const failures = new Map<string, ItemFailure>();
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    let finish: (error?: Error) => void = () => undefined;
    const acknowledged = new Promise<Map<string, ItemFailure>>((resolve, reject) => {
      let next = 0;
      let unacknowledged = 0;
      finish = (error?: Error): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        connection.waiting.delete(finish);
        if (error) reject(error);
        else resolve(failures);
      };
      // Restarted by every PUBACK: a long batch is fine, a silent broker is not.
      const arm = (): void => {
        clearTimeout(timer);
        timer = setTimeout(() => {
          this.drop(
            connection,
            `no PUBACK from the MQTT broker at ${this.peer.address} within ${this.config.timeoutMs} ms`,
          );
        }, this.config.timeoutMs);
      };
      const pump = (): void => {
        while (!settled && unacknowledged < window && next < batch.length) {
          const event = batch[next++] as OutboundEvent;
          unacknowledged++;
          client.publish(renderTopic(this.config, event), event.json, this.optionsFor(event), (error) => {
            unacknowledged--;
            if (settled) return;
            const reason = (error as { code?: unknown } | undefined)?.code;
            if (error && typeof reason !== 'number') {
              finish(
                new SinkUnavailableError(
                  `publishing to the MQTT broker at ${this.peer.address} failed: ${scrubSecrets(error.message)}`,
                ),
              );
              return;
            }
            if (typeof reason === 'number')
              failures.set(event.id, {
                error: `PUBACK ${reason}: ${reasonName(connection.mqtt, reason)}`,
                permanent: PERMANENT_REASONS.has(reason),
                status: reason,
              });
            arm();
            if (next === batch.length && unacknowledged === 0) finish();
            else pump();
          });
        }
      };
      connection.waiting.add(finish);
      arm();
      pump();
    });
    // Nobody waits for `acknowledged` once the caller stopped; settling it only ends the watch.
    return { acknowledged, stop: () => finish(new Error('publishing stopped')) };
  }

  private optionsFor(event: OutboundEvent): IClientPublishOptions {
    if (!this.config.ceUserProperties) return this.publishOptions;
    const userProperties = Object.fromEntries(ceAttributes(JSON.parse(event.json) as Record<string, unknown>));
    return { ...this.publishOptions, properties: { ...this.publishOptions.properties, userProperties } };
  }

  /**
   * Ends `connection` at once and fails the writes waiting on it; a write holding an older
   * connection cannot end a newer one.
   */
  private drop(connection: Connection, reason: string): void {
    this.connection.release(connection);
    if (connection.onClose) connection.client.removeListener('close', connection.onClose);
    const error = new SinkUnavailableError(reason);
    for (const fail of connection.waiting) fail(error);
    connection.client.end(true);
  }
}
