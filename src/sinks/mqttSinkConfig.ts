import { z } from 'zod';
import { certAndKeyTogether, clientCertFields } from '../tlsFiles.js';
import { dataschemaSchema } from './dataSchemaAttribute.js';
import { sinkCommonSchema } from '../sinkContract/deliveryConfig.js';
import { templateSchema } from './eventTemplate.js';
import {
  caFile,
  connectTimeoutMs,
  credentialFreeUrl,
  inlineOrFile,
  loginFields,
  timeLimitMs,
} from './sinkConfigFields.js';

/** What `{placeholder}` in a topic template may stand for; see renderTopic. */
export const TOPIC_PLACEHOLDERS = ['prefix', 'tenant', 'type', 'log', 'event', 'subject'] as const;
/** Wildcards and NUL may not appear in a topic name; `$` topics belong to the broker. */
const isTopicText = (text: string): boolean => !/[+#]/.test(text) && !text.includes('\u0000') && !text.startsWith('$');

const topicTemplateSchema = templateSchema(TOPIC_PLACEHOLDERS, (sample) =>
  isTopicText(sample) ? undefined : 'must be an MQTT topic name: no wildcards (+ #), not starting with $',
).min(1);

export const mqttSinkConfigSchema = sinkCommonSchema
  .extend({
    type: z.literal('mqtt'),
    url: credentialFreeUrl({ protocol: /^mqtts?$/, message: 'must be an mqtt:// or mqtts:// URL' })
      .default('mqtt://127.0.0.1:1883')
      .describe('Broker, `mqtt://host:port`; `mqtts://` connects with TLS (certificate checks stay on).'),
    ...loginFields('User name. Not treated as a secret; a broker that takes a token here should get it in `password`.'),
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
        'Topic each event is published to. Placeholders: `{prefix}`, ' +
          '`{tenant}` the tenant (`default` for a single-company config), `{type}` the CloudEvent type, ' +
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
    connectTimeoutMs: connectTimeoutMs(
      'A connection the broker has not accepted (CONNACK) within this time counts as failed.',
    ),
    timeoutMs: timeLimitMs(
      10_000,
      300_000,
      'Longest wait for the next PUBACK while a batch is published; past it the connection counts as lost and ' +
        'the batch is sent again.',
    ),
    caFile: caFile('PEM file of CA certificates to trust with `mqtts://`, for a broker with a private CA.'),
    ...clientCertFields,
    dataschema: dataschemaSchema,
  })
  .strict()
  .refine((c) => !c.ceUserProperties || c.protocolVersion === 5, {
    message: 'user properties need MQTT 5 (protocolVersion: 5)',
    path: ['ceUserProperties'],
  })
  .refine(...certAndKeyTogether)
  .refine(...inlineOrFile('password', 'passwordFile'));

export type MqttSinkConfig = z.infer<typeof mqttSinkConfigSchema>;
