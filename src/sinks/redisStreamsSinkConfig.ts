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
  urlOrUndefined,
} from './sinkConfigFields.js';

/** What `{placeholder}` in a key template may stand for; see renderKey. */
export const KEY_PLACEHOLDERS = ['prefix', 'tenant', 'type', 'log', 'event', 'subject'] as const;

const keyTemplateSchema = templateSchema(KEY_PLACEHOLDERS).min(1);

export const redisStreamsSinkConfigSchema = sinkCommonSchema
  .extend({
    type: z.literal('redis-streams'),
    url: credentialFreeUrl({ protocol: /^rediss?$/, message: 'must be a redis:// or rediss:// URL' })
      .refine(
        (u) => /^\/?\d*$/.test(urlOrUndefined(u)?.pathname ?? ''),
        'the path can only be a database number, e.g. redis://host:6379/2',
      )
      .default('redis://127.0.0.1:6379')
      .describe('Redis server, `redis://host:port/db` (database 0 when no path); `rediss://` connects with TLS.'),
    ...loginFields(
      'Redis ACL user (Redis 6+); the `default` user when absent. Not a secret.',
      "Secret: password of `username`, or the server's `requirepass`.",
    ),
    prefix: z.string().min(1).default('changefeed').describe('What `{prefix}` stands for in `key`.'),
    key: keyTemplateSchema
      .default('{prefix}:{log}')
      .describe(
        'Stream key each event is added to. Placeholders: `{prefix}`, ' +
          '`{tenant}` the tenant (`default` for a single-company config), `{type}` the CloudEvent ' +
          'type, `{log}` career, skill or identity_provider, `{event}` the event name, `{subject}` ' +
          "the career or skill id (`_` for the identity-provider log). A consumer sees an object's " +
          'events in order only when they share a key: keep `{type}` and `{event}` out of it if ' +
          'order matters.',
      ),
    maxLen: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe(
        'Trim each stream to about this many entries on every add (`MAXLEN ~ n`); Redis may keep ' +
          'somewhat more. Trimming drops entries whether or not consumers have read them. No ' +
          'trimming when absent.',
      ),
    connectTimeoutMs: connectTimeoutMs('A connection not ready within this time counts as failed.'),
    timeoutMs: timeLimitMs(
      10_000,
      300_000,
      'A batch Redis has not answered within this time counts as a lost connection: the connection is closed ' +
        'and the batch sent again.',
    ),
    tls: z
      .boolean()
      .default(false)
      .describe('Connect with TLS (also implied by a `rediss://` URL). Certificate checks stay on.'),
    caFile: caFile('PEM file of CA certificates to trust with TLS, for a server with a private CA.'),
    ...clientCertFields,
    dataschema: dataschemaSchema,
  })
  .strict()
  .refine(...certAndKeyTogether)
  .refine(...inlineOrFile('password', 'passwordFile'));

export type RedisStreamsSinkConfig = z.infer<typeof redisStreamsSinkConfigSchema>;
