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
  percentDecodes,
  timeLimitMs,
  urlOrUndefined,
} from './sinkConfigFields.js';

/** What `{placeholder}` in a routing-key template may stand for; see routingKeyFor. */
export const ROUTING_KEY_PLACEHOLDERS = ['tenant', 'type', 'log', 'event', 'subject'] as const;

const urlSchema = credentialFreeUrl({
  protocol: /^amqps?$/,
  message: 'must be an amqp:// or amqps:// URL',
  refusal: 'must carry neither credentials (set username and password) nor ?options (see heartbeatSeconds)',
  accepts: (url) => url.search === '',
}).refine(
  // The constructor decodes the vhost; a stray `%` would throw there, after config was accepted.
  (text) => percentDecodes(urlOrUndefined(text)?.pathname ?? ''),
  'the vhost (the path of url) is not valid percent-encoding: write a literal % as %25',
);

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
    ...loginFields('User name, with `password`; `guest` when both are absent.'),
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
        'Routing key of each message. Placeholders: ' +
          '`{tenant}` the tenant (`default` for a single-company config), `{type}` the CloudEvent type ' +
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
    connectTimeoutMs: connectTimeoutMs(
      'Limit on connecting: TCP, the AMQP handshake, opening the channel and checking the exchange.',
    ),
    confirmTimeoutMs: timeLimitMs(
      15_000,
      300_000,
      'A batch not fully confirmed by the broker within this time fails and is sent again (a blocked or stuck ' +
        'broker must not hold a write forever).',
    ),
    caFile: caFile('PEM file of CA certificates to trust with `amqps://`, for a broker with a private CA.'),
    ...clientCertFields,
    dataschema: dataschemaSchema,
  })
  .strict()
  .refine(...inlineOrFile('password', 'passwordFile'))
  .refine((c) => (c.password === undefined && c.passwordFile === undefined) || c.username !== undefined, {
    message: 'password needs username',
    path: ['password'],
  })
  .refine(...certAndKeyTogether);

export type RabbitmqSinkConfig = z.infer<typeof rabbitmqSinkConfigSchema>;
