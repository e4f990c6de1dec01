import {
  connect as mqttConnect,
  ReasonCodes,
  type IClientOptions,
  type IClientPublishOptions,
  type MqttClient,
} from 'mqtt';
import { z } from 'zod';
import { deliverySchema, RETRY_DEFAULTS, sinkCommonSchema } from '../deliver/deliveryConfig.js';
import { registerSecret, scrubSecrets } from '../observe/secretRegistry.js';
import { certAndKeyTogether, clientCertFields, readTlsFiles } from '../tlsFiles.js';
import { escapeTemplateValue, renderTemplate, templateSchema, templateValues } from './eventTemplate.js';
import type { OutboundEvent, Sink } from './sink.js';
import { SinkPartialFailureError, SinkUnavailableError, type ItemFailure } from './sinkErrors.js';

/** What `{placeholder}` in a topic template may stand for; see renderTopic. */
export const TOPIC_PLACEHOLDERS = ['prefix', 'type', 'log', 'event', 'subject'] as const;
/** Wildcards and NUL may not appear in a topic name; `$` topics belong to the broker. */
const isTopicText = (text: string): boolean => !/[+#]/.test(text) && !text.includes('\u0000') && !text.startsWith('$');

/**
 * PUBACK reason codes that are about the event itself (its topic, its size, its payload), so
 * sending it again cannot help. Every other refusal (not authorized, quota exceeded, ...) is for an
 * operator to fix, and the event is retried.
 */
const PERMANENT_REASONS = new Set([0x90, 0x95, 0x99]);

const reasonName = (code: number): string =>
  (ReasonCodes as Record<number, string | undefined>)[code] ?? `reason code ${code}`;

const topicTemplateSchema = templateSchema(TOPIC_PLACEHOLDERS, (sample) =>
  isTopicText(sample) ? undefined : 'must be an MQTT topic name: no wildcards (+ #), not starting with $',
).min(1);

export const mqttSinkConfigSchema = sinkCommonSchema
  .extend({
    type: z.literal('mqtt'),
    url: z
      .url({ protocol: /^mqtts?$/, message: 'must be an mqtt:// or mqtts:// URL' })
      .refine(
        (u) => new URL(u).username === '' && new URL(u).password === '',
        'put credentials in username and password, not in the URL',
      )
      .default('mqtt://127.0.0.1:1883')
      .describe('Broker, `mqtt://host:port`; `mqtts://` connects with TLS (certificate checks stay on).'),
    username: z
      .string()
      .min(1)
      .optional()
      .describe('User name. Not treated as a secret; a broker that takes a token here should get it in `password`.'),
    password: z.string().min(1).optional().describe('Secret: password of `username`.'),
    clientId: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .describe(
        'Client id, naming the persistent session; `changefeed-<name>` when absent. Keep it stable ' +
          'and give each daemon its own: a second connection with the same id takes the session over ' +
          'and disconnects the first.',
      ),
    prefix: z
      .string()
      .min(1)
      .refine(isTopicText, 'no wildcards (+ #), not starting with $')
      .default('changefeed')
      .describe('What `{prefix}` stands for in `topic`; may hold `/` for several levels.'),
    topic: topicTemplateSchema
      .default('{prefix}/{log}/{event}')
      .describe(
        'Topic each event is published to. Placeholders: `{prefix}`, `{type}` the CloudEvent type, ' +
          '`{log}` career, skill or identity_provider, `{event}` the event name, `{subject}` the ' +
          'career or skill id (`_` for the identity-provider log). `/`, `+`, `#` in placeholder ' +
          'values become `_`. The broker keeps order per topic only: use `{prefix}/{log}/{subject}` ' +
          "if consumers need each object's events in order across event types.",
      ),
    retain: z
      .boolean()
      .default(false)
      .describe('Publish with the retain flag: the broker keeps the last event of each topic for new subscribers.'),
    ceUserProperties: z
      .boolean()
      .default(false)
      .describe(
        'Also put every CloudEvent attribute (id, type, source, ...) in an MQTT 5 user property of ' +
          'that name; the payload is always the whole CloudEvent JSON.',
      ),
    protocolVersion: z
      .union([z.literal(4), z.literal(5)])
      .default(5)
      .describe('MQTT protocol: 5, or 4 for MQTT 3.1.1 brokers (no user properties, no session expiry).'),
    sessionExpirySeconds: z
      .number()
      .int()
      .min(1)
      .max(4_294_967_295)
      .default(3_600)
      .describe(
        'MQTT 5: how long the broker keeps the session after the connection closes. MQTT 3.1.1 ' +
          'brokers keep it as long as they are configured to.',
      ),
    connectTimeoutMs: z
      .number()
      .int()
      .min(100)
      .max(120_000)
      .default(10_000)
      .describe('A connection the broker has not accepted (CONNACK) within this time counts as failed.'),
    timeoutMs: z
      .number()
      .int()
      .min(100)
      .max(300_000)
      .default(10_000)
      .describe(
        'Longest wait for the next PUBACK while a batch is published; past it the connection ' +
          'counts as lost and the batch is sent again.',
      ),
    caFile: z
      .string()
      .min(1)
      .optional()
      .describe('PEM file of CA certificates to trust with `mqtts://`, for a broker with a private CA.'),
    ...clientCertFields,
    delivery: deliverySchema(RETRY_DEFAULTS),
  })
  .strict()
  .refine((c) => !c.ceUserProperties || c.protocolVersion === 5, {
    message: 'user properties need MQTT 5 (protocolVersion: 5)',
    path: ['ceUserProperties'],
  })
  .refine(...certAndKeyTogether);

export type MqttSinkConfig = z.infer<typeof mqttSinkConfigSchema>;

/** The event's topic. Placeholder values cannot add levels or wildcards. */
export function renderTopic(
  config: Pick<MqttSinkConfig, 'topic' | 'prefix'>,
  event: Pick<OutboundEvent, 'type' | 'log' | 'objectId'>,
): string {
  // The prefix is the operator's own and may hold levels; event values may not.
  return renderTemplate(config.topic, templateValues(event, config.prefix), (value, name) =>
    name === 'prefix' || name === 'log' ? value : level(value),
  );
}

/** What a topic level built from event data may not hold: separators, wildcards and the control characters MQTT forbids or discourages (MQTT 5 1.5.4, 4.7). */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const TOPIC_LEVEL_FORBIDDEN = /[/+#\u0000-\u001f\u007f-\u009f\ufffe\uffff]/;

function level(value: string): string {
  return escapeTemplateValue(value, TOPIC_LEVEL_FORBIDDEN);
}

interface Connection {
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
  // One connection, one ordered stream: a batch's publishes are already pipelined up to the
  // broker's Receive Maximum, so parallel writes would gain little and would have to share that
  // window. 200 events bound what a lost connection sends twice, and take few round trips even at
  // Mosquitto's default Receive Maximum of 20.
  readonly limits = { maxBatchSize: 200, maxInFlight: 1 };
  private connection: Connection | undefined;
  private readonly options: IClientOptions;
  private readonly publishOptions: IClientPublishOptions;
  /** The broker, for messages: no credentials. */
  private readonly broker: string;

  constructor(private readonly config: MqttSinkConfig) {
    if (config.password) registerSecret(config.password);
    const url = new URL(config.url);
    // Not url.origin: that is "null" for schemes the URL standard does not know, such as mqtt:.
    this.broker = `${url.protocol}//${url.host}`;
    const v5 = config.protocolVersion === 5;
    this.options = {
      protocolVersion: config.protocolVersion,
      clientId: config.clientId ?? `changefeed-${config.name}`,
      clean: false,
      // Without an expiry an MQTT 5 session ends with its connection: not persistent at all.
      properties: v5 ? { sessionExpiryInterval: config.sessionExpirySeconds } : undefined,
      username: config.username,
      password: config.password,
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

  get name(): string {
    return this.config.name;
  }

  async connect(signal: AbortSignal): Promise<void> {
    if (this.connection?.client.connected) return;
    if (this.connection) this.drop(this.connection, 'reconnecting');
    signal.throwIfAborted();
    const client = mqttConnect(this.config.url, this.options);
    const connection: Connection = { client, waiting: new Set() };
    client.on('error', (error) => {
      connection.lastError = scrubSecrets(error.message);
    });
    client.on('disconnect', (packet) => {
      connection.lastError = `the broker disconnected: ${reasonName(packet.reasonCode ?? 0)}`;
    });
    let onConnect: (() => void) | undefined;
    let onClose: (() => void) | undefined;
    let onAbort: (() => void) | undefined;
    try {
      await new Promise<void>((resolve, reject) => {
        onConnect = resolve;
        // Refused, timed out (no CONNACK) or rejected (bad credentials): each ends in 'close'.
        onClose = () => reject(new Error(connection.lastError ?? 'connection closed'));
        onAbort = () => reject(signal.reason as Error);
        client.once('connect', onConnect).once('close', onClose);
        signal.addEventListener('abort', onAbort, { once: true });
        client.connect();
      });
    } catch (error) {
      client.end(true);
      if (signal.aborted) throw error;
      const reason = (error as Error).message;
      const hint = /username or password|not authorized/i.test(reason) ? '; check username and password' : '';
      throw new SinkUnavailableError(`cannot connect to the MQTT broker at ${this.broker}: ${reason}${hint}`);
    } finally {
      client.removeListener('connect', onConnect as () => void).removeListener('close', onClose as () => void);
      signal.removeEventListener('abort', onAbort as () => void);
    }
    connection.onClose = () =>
      this.drop(
        connection,
        `connection to the MQTT broker at ${this.broker} lost${connection.lastError ? `: ${connection.lastError}` : ''}`,
      );
    client.on('close', connection.onClose);
    this.connection = connection;
  }

  async write(batch: readonly OutboundEvent[], signal: AbortSignal): Promise<void> {
    const connection = this.connection;
    if (!connection?.client.connected) {
      // mqtt.js would queue a publish until a reconnect that never comes (reconnectPeriod 0).
      throw new SinkUnavailableError(
        `not connected to the MQTT broker at ${this.broker}${connection?.lastError ? `: ${connection.lastError}` : ''}`,
      );
    }
    signal.throwIfAborted();
    const failures = await this.publishAll(connection, batch, signal);
    if (failures.size > 0) {
      const [first] = failures.values();
      throw new SinkPartialFailureError(
        `the MQTT broker at ${this.broker} refused ${failures.size} of ${batch.length} events: ${first?.error ?? ''}`,
        failures,
      );
    }
  }

  async close(): Promise<void> {
    const connection = this.connection;
    if (!connection) return;
    this.connection = undefined;
    if (connection.onClose) connection.client.removeListener('close', connection.onClose);
    for (const fail of connection.waiting) fail(new SinkUnavailableError(`the MQTT sink ${this.name} was closed`));
    // A DISCONNECT tells the broker this was no failure; a broker that does not answer gets 1 s.
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 1_000);
      connection.client.end(false, {}, () => {
        clearTimeout(timer);
        resolve();
      });
    });
    connection.client.end(true);
  }

  /**
   * Publishes the batch in order, keeping at most the broker's Receive Maximum unacknowledged (an
   * MQTT 5 rule mqtt.js leaves to us), and resolves with the refused events once every PUBACK
   * arrived. Rejects when the connection is lost, no PUBACK comes within timeoutMs, or on abort.
   */
  private publishAll(
    connection: Connection,
    batch: readonly OutboundEvent[],
    signal: AbortSignal,
  ): Promise<Map<string, ItemFailure>> {
    const { client } = connection;
    const window = client.serverProperties?.receiveMaximum ?? batch.length;
    const failures = new Map<string, ItemFailure>();
    return new Promise((resolve, reject) => {
      let next = 0;
      let unacknowledged = 0;
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      const finish = (error?: Error): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        connection.waiting.delete(finish);
        if (error) reject(error);
        else resolve(failures);
      };
      const onAbort = (): void => finish(signal.reason as Error);
      // Restarted by every PUBACK: a long batch is fine, a silent broker is not.
      const arm = (): void => {
        clearTimeout(timer);
        timer = setTimeout(() => {
          this.drop(connection, `no PUBACK from the MQTT broker at ${this.broker} within ${this.config.timeoutMs} ms`);
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
                  `publishing to the MQTT broker at ${this.broker} failed: ${scrubSecrets(error.message)}`,
                ),
              );
              return;
            }
            if (typeof reason === 'number')
              failures.set(event.id, {
                error: `PUBACK ${reason}: ${reasonName(reason)}`,
                permanent: PERMANENT_REASONS.has(reason),
                status: reason,
              });
            arm();
            if (next === batch.length && unacknowledged === 0) finish();
            else pump();
          });
        }
      };
      signal.addEventListener('abort', onAbort, { once: true });
      connection.waiting.add(finish);
      arm();
      pump();
    });
  }

  private optionsFor(event: OutboundEvent): IClientPublishOptions {
    if (!this.config.ceUserProperties) return this.publishOptions;
    const userProperties: Record<string, string> = {};
    for (const [name, value] of Object.entries(JSON.parse(event.json) as Record<string, unknown>)) {
      if (name === 'data' || name === 'datacontenttype' || value === undefined || value === null) continue;
      userProperties[name] = typeof value === 'string' ? value : JSON.stringify(value);
    }
    return { ...this.publishOptions, properties: { ...this.publishOptions.properties, userProperties } };
  }

  /**
   * Ends `connection` at once and fails the writes waiting on it; a write holding an older
   * connection cannot end a newer one.
   */
  private drop(connection: Connection, reason: string): void {
    if (this.connection === connection) this.connection = undefined;
    if (connection.onClose) connection.client.removeListener('close', connection.onClose);
    const error = new SinkUnavailableError(reason);
    for (const fail of connection.waiting) fail(error);
    connection.client.end(true);
  }
}
