import { cloudEventSchema, dataSchema, type JsonSchema, type SchemaName } from '../events/eventSchemas.js';
import { LOG_KINDS } from '../logs.js';

/**
 * The AsyncAPI 3.0 document of what changefeed sends: one channel per kind of destination
 * (webhook, NATS subject, RabbitMQ routing key, Redis stream, MQTT topic, the pull feed and its
 * live stream), each with the headers or properties it adds and, for webhooks, the signature
 * scheme. Addresses hold the sink's template (`{type}`, `{log}`...) as parameters; hosts are the
 * operator's, so servers are variables. Generated into docs/events/asyncapi.yaml.
 */
const ref = (name: SchemaName): string => `#/components/schemas/${name}`;

const string = (description: string, extra: JsonSchema = {}): JsonSchema => ({ type: 'string', description, ...extra });

const CE_JSON = 'application/cloudevents+json';

const CE_ATTRIBUTE_NOTE =
  'one per CloudEvent attribute except data and datacontenttype (id, source, type, subject, time, specversion, tenant, entryid, and dataschema when set)';

const PARAMETERS = {
  tenant: 'the tenant the event belongs to (`default` for a single-company config)',
  type: 'the CloudEvent type, `<typePrefix>.<log>.<event>`',
  log: 'career, skill or identity_provider',
  event: 'the event name',
  subject: 'the career or skill id (`_` for the identity-provider log)',
};

function templateParameter(setting: string, fallback: string, escaping: string): Record<string, unknown> {
  return {
    description:
      `Rendered from the sink's \`${setting}\` template (default \`${fallback}\`), whose placeholders stand for ` +
      `${Object.entries(PARAMETERS)
        .map(([name, meaning]) => `{${name}} ${meaning}`)
        .join(', ')}. ${escaping}`,
  };
}

function server(protocol: string, defaultHost: string, description: string): Record<string, unknown> {
  return { host: '{host}', protocol, description, variables: { host: { default: defaultHost } } };
}

function channel(
  address: string | null,
  description: string,
  message: string,
  serverName: string,
  parameters: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    address,
    description,
    servers: [{ $ref: `#/servers/${serverName}` }],
    messages: { [message]: { $ref: `#/components/messages/${message}` } },
    ...(Object.keys(parameters).length > 0 ? { parameters } : {}),
  };
}

function operation(channelName: string, summary: string, bindings?: Record<string, unknown>): Record<string, unknown> {
  return { action: 'send', channel: { $ref: `#/channels/${channelName}` }, summary, ...(bindings ? { bindings } : {}) };
}

const cloudEvent = { $ref: ref('cloudevent') };

interface MessageParts {
  summary: string;
  contentType?: string;
  payload?: JsonSchema;
  headers?: JsonSchema;
}

/** The messages, each named after its key and titled by its summary; the CloudEvent JSON unless said otherwise. */
function messages(parts: Record<string, MessageParts>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(parts).map(([name, { summary, contentType = CE_JSON, payload = cloudEvent, headers }]) => [
      name,
      { name, title: summary, summary, contentType, payload, ...(headers ? { headers } : {}) },
    ]),
  );
}

export function asyncApiDocument(): Record<string, unknown> {
  const schemas: Record<string, JsonSchema> = { cloudevent: stripDraft(cloudEventSchema(ref)) };
  for (const log of LOG_KINDS) schemas[`${log}-data`] = stripDraft(dataSchema(log));
  return {
    asyncapi: '3.0.0',
    info: {
      title: 'skills-changefeed events',
      version: '1.0.0',
      description:
        'Changes read from the activity logs of the skills-management service, as CloudEvents 1.0. Every ' +
        'destination carries the same event (structured JSON mode unless noted), at least once, in order per ' +
        'object; the event `id` is stable across retries and replays, so consumers deduplicate on it. ' +
        "Schemas of the envelope and of each log's `data` are in docs/events/ (`changefeed schema`).",
    },
    defaultContentType: CE_JSON,
    servers: {
      webhook: server('https', 'hooks.example.com', "The receiver at the webhook sink's `url`."),
      nats: server('nats', '127.0.0.1:4222', "The NATS server of the nats sink's `servers` (JetStream)."),
      rabbitmq: server('amqp', '127.0.0.1:5672', "The broker of the rabbitmq sink's `url`."),
      redis: server('redis', '127.0.0.1:6379', "The Redis of the redis-streams sink's `url`."),
      mqtt: server('mqtt', '127.0.0.1:1883', "The broker of the mqtt sink's `url`."),
      feed: {
        ...server('http', '127.0.0.1:9465', "changefeed's feed listener (`feed.port`), with `feed.enabled`."),
        security: [{ $ref: '#/components/securitySchemes/feedToken' }],
      },
    },
    channels: {
      webhook: channel(
        null,
        "One POST per event to the sink's `url`, signed per Standard Webhooks. A 2xx answer acknowledges it.",
        'webhookEvent',
        'webhook',
      ),
      natsSubject: channel(
        '{subject}',
        'One JetStream publish per event, acknowledged by the stream; `Nats-Msg-Id` is the event id.',
        'natsEvent',
        'nats',
        { subject: templateParameter('subject', '{type}', 'Characters a token cannot hold are %-escaped.') },
      ),
      rabbitmqRoutingKey: channel(
        '{routingKey}',
        "Persistent messages to the sink's exchange with this routing key, under publisher confirms.",
        'rabbitmqEvent',
        'rabbitmq',
        { routingKey: templateParameter('routingKey', '{type}', 'At most 255 bytes; values are %-escaped.') },
      ),
      redisStream: channel(
        '{key}',
        'One XADD per event to this stream key; entry fields id, type, source, subject, time and event.',
        'redisStreamEntry',
        'redis',
        { key: templateParameter('key', '{prefix}:{log}', "`{prefix}` is the sink's prefix (default changefeed).") },
      ),
      mqttTopic: channel('{topic}', 'One QoS 1 publish per event to this topic.', 'mqttEvent', 'mqtt', {
        topic: templateParameter('topic', '{prefix}/{log}/{event}', 'Wildcards and control characters are %-escaped.'),
      }),
      feedPage: channel(
        '/v1/events',
        'The journal in pages (`GET /v1/events?after=&limit=&log=&type=&wait=`): a CloudEvents batch in ' +
          'ingestion order; the cursor to continue from is in `Link: <...>; rel="next"` and `Changefeed-Cursor`. ' +
          '410 with `oldestCursor` when the cursor is older than the journal keeps.',
        'feedPage',
        'feed',
      ),
      feedStream: channel(
        '/v1/events/stream',
        'The journal as Server-Sent Events: `id:` the cursor, `data:` the CloudEvent JSON; resume with ' +
          '`Last-Event-ID`; a comment line every `feed.heartbeatSeconds` while idle.',
        'feedStreamEvent',
        'feed',
      ),
    },
    operations: {
      postWebhook: operation('webhook', 'POST each event to the receiver.', { http: { method: 'POST' } }),
      publishNats: operation('natsSubject', 'Publish each event to JetStream.'),
      publishRabbitmq: operation('rabbitmqRoutingKey', 'Publish each event to the exchange.', {
        amqp: { deliveryMode: 2, mandatory: false, timestamp: false },
      }),
      addToRedisStream: operation('redisStream', 'XADD each event to the stream.'),
      publishMqtt: operation('mqttTopic', 'Publish each event at QoS 1.', { mqtt: { qos: 1, retain: false } }),
      serveFeedPage: operation('feedPage', 'Answer GET /v1/events with a page of events.', {
        http: { method: 'GET' },
      }),
      serveFeedStream: operation('feedStream', 'Stream events to GET /v1/events/stream.', { http: { method: 'GET' } }),
    },
    components: {
      schemas,
      messages: messages({
        webhookEvent: {
          summary: 'A change event as a webhook request',
          headers: {
            type: 'object',
            required: ['webhook-id', 'webhook-timestamp', 'content-type', 'user-agent'],
            properties: {
              'webhook-id': string('The CloudEvent id, identical on every retry: the idempotency key.'),
              'webhook-timestamp': string('Unix seconds when this attempt was sent.', { pattern: '^[0-9]+$' }),
              'webhook-signature': string(
                'Present when the sink has a secret: `v1,<base64 HMAC-SHA256>` of `<webhook-id>.<webhook-timestamp>.<body>` ' +
                  "keyed with the secret's base64-decoded bytes (the part after `whsec_`); one per secret, separated by " +
                  'spaces, during a rotation. Reject a timestamp more than 5 minutes off.',
                { pattern: '^v1,[A-Za-z0-9+/=]+( v1,[A-Za-z0-9+/=]+)*$' },
              ),
              'content-type': string(
                '`application/cloudevents+json` (mode structured: the body is the CloudEvent) or `application/json` ' +
                  '(mode binary: the body is the data, the attributes are ce-* headers).',
                { enum: ['application/cloudevents+json', 'application/json'] },
              ),
              'user-agent': { const: 'skills-changefeed' },
            },
            patternProperties: { '^ce-': string(`Mode binary only: ${CE_ATTRIBUTE_NOTE}, percent-encoded.`) },
            additionalProperties: { type: 'string', description: "The sink's static `headers`." },
          },
        },
        natsEvent: {
          summary: 'A change event on a NATS subject',
          headers: {
            type: 'object',
            properties: {
              'content-type': { const: 'application/cloudevents+json' },
              'Nats-Msg-Id': string('The CloudEvent id: JetStream drops a re-sent event within its duplicate window.'),
            },
            patternProperties: { '^ce-': string(`With \`ceHeaders\`: ${CE_ATTRIBUTE_NOTE}, percent-encoded.`) },
          },
        },
        rabbitmqEvent: {
          summary: 'A change event as an AMQP message',
          headers: {
            type: 'object',
            description:
              'AMQP properties: message-id the CloudEvent id, type the CloudEvent type, content-type ' +
              'application/cloudevents+json, app-id skills-changefeed, delivery-mode 2 (persistent). Headers below.',
            patternProperties: {
              '^cloudEvents:': string(`With \`ceHeaders\`: ${CE_ATTRIBUTE_NOTE} (CloudEvents AMQP binding).`),
            },
          },
        },
        redisStreamEntry: {
          summary: 'A change event as a Redis stream entry',
          payload: {
            type: 'object',
            description: 'The entry fields. Redis does not deduplicate: skip ids already handled.',
            required: ['id', 'tenant', 'type', 'source', 'subject', 'time', 'event'],
            properties: {
              id: string('The CloudEvent id.'),
              tenant: string('The CloudEvent tenant: the company the event belongs to.'),
              type: string('The CloudEvent type.'),
              source: string('The CloudEvent source.'),
              subject: string('The CloudEvent subject; empty for the identity-provider log.'),
              time: string('The CloudEvent time; empty when unknown.'),
              event: string('The whole CloudEvent JSON, as the schema cloudevent describes.', {
                contentMediaType: 'application/cloudevents+json',
              }),
            },
          },
        },
        mqttEvent: {
          summary: 'A change event on an MQTT topic',
          headers: {
            type: 'object',
            description:
              'MQTT 5 properties: content type application/cloudevents+json, payload format indicator 1 (UTF-8). ' +
              `With \`ceUserProperties\`, user properties: ${CE_ATTRIBUTE_NOTE}.`,
          },
        },
        feedPage: {
          summary: 'A page of the pull feed',
          contentType: 'application/cloudevents-batch+json',
          payload: {
            type: 'array',
            description: 'Events in ingestion order, each with `sequence`, its cursor. Empty when nothing is new.',
            items: cloudEvent,
          },
          headers: {
            type: 'object',
            required: ['link', 'changefeed-cursor'],
            properties: {
              link: string(
                '`</v1/events?after=<cursor>&...>; rel="next"`: the same request, continuing after this page.',
              ),
              'changefeed-cursor': string('The cursor to continue from: 16 digits.', { pattern: '^[0-9]{16}$' }),
            },
          },
        },
        feedStreamEvent: {
          summary: 'One Server-Sent Event of the live stream',
          contentType: 'text/event-stream',
          headers: {
            type: 'object',
            description:
              'SSE fields of each event: `id` the cursor (send it back as Last-Event-ID), `data` the payload.',
            properties: { id: string('The cursor of the event: 16 digits.', { pattern: '^[0-9]{16}$' }) },
          },
        },
      }),
      securitySchemes: {
        feedToken: {
          type: 'http',
          scheme: 'bearer',
          description: 'One of the tokens of `feed.tokens` or `feed.tokenFiles`; 401 otherwise.',
        },
      },
    },
  };
}

/** AsyncAPI schemas sit inside the document: no `$schema` of their own. */
function stripDraft(schema: JsonSchema): JsonSchema {
  const { $schema: _draft, ...rest } = schema;
  return rest;
}
