import { z } from 'zod';
import { certAndKeyTogether, clientCertFields } from '../tlsFiles.js';
import { dataschemaSchema } from './dataSchemaAttribute.js';
import { sinkCommonSchema } from '../sinkContract/deliveryConfig.js';
import { templateSchema as templateSchema_ } from './eventTemplate.js';
import { caFile, inlineOrFile, secretFile, timeLimitMs, urlOrUndefined } from './sinkConfigFields.js';

/** What `{placeholder}` in a subject template may stand for; see renderSubject. */
export const SUBJECT_PLACEHOLDERS = ['tenant', 'type', 'log', 'event', 'subject'] as const;
/** A token may not be empty nor hold whitespace or the wildcards `*` and `>`. */
const SUBJECT = /^[^\s.*>]+(\.[^\s.*>]+)*$/;

/** A configured server as a URL: `host:port` means `nats://host:port`. Undefined when it is none. */
export function natsServerUrl(server: string): URL | undefined {
  return urlOrUndefined(server.includes('://') ? server : `nats://${server}`);
}

const serverSchema = z.string().refine((s) => {
  const url = natsServerUrl(s);
  return url?.protocol === 'nats:' && url.username === '' && url.password === '';
}, 'must be nats://host:port or host:port, without credentials (set user/password or token)');

const templateSchema = templateSchema_(SUBJECT_PLACEHOLDERS, (sample) =>
  !SUBJECT.test(sample) || /[{}]/.test(sample)
    ? 'must be a NATS subject: dot-separated non-empty tokens, no spaces, no wildcards (* >), ' +
      'braces only around placeholders'
    : undefined,
);

export const natsSinkConfigSchema = sinkCommonSchema
  .extend({
    type: z.literal('nats'),
    servers: z
      .union([serverSchema, z.array(serverSchema).min(1)])
      .default(['nats://127.0.0.1:4222'])
      .describe(
        'NATS server URL(s), `nats://host:port`; with several, each connect tries them in random ' +
          'order until one answers.',
      ),
    user: z.string().min(1).optional().describe('User name, with `password`.'),
    password: z.string().min(1).optional().describe('Secret: password of `user`.'),
    passwordFile: secretFile('`password`'),
    token: z.string().min(1).optional().describe('Secret: authentication token (instead of user/password).'),
    tokenFile: secretFile('`token`'),
    tls: z
      .boolean()
      .default(false)
      .describe(
        'Require TLS (also implied by `caFile` or `certFile`); without it TLS is used when the server ' +
          'requires or offers it. Certificate checks stay on.',
      ),
    caFile: caFile('PEM file of CA certificates to trust with TLS, for a server with a private CA.'),
    timeoutMs: timeLimitMs(
      5_000,
      120_000,
      'Limit on connecting and on each publish acknowledgement; an event not acknowledged within it counts as failed.',
    ),
    subject: templateSchema
      .default('{type}')
      .describe(
        'Subject each event is published to. Placeholders: ' +
          '`{tenant}` the tenant (`default` for a single-company config), `{type}` the CloudEvent type ' +
          '(`<typePrefix>.<log>.<event>`, several tokens), `{log}` career, skill or ' +
          'identity_provider, `{event}` the event name, `{subject}` the career or skill id (`_` for ' +
          'the identity-provider log). Characters a token cannot hold (`.`, space, `*`, `>`) become ' +
          '`_` in placeholder values.',
      ),
    ceHeaders: z
      .boolean()
      .default(false)
      .describe(
        'Also put every CloudEvent attribute in a `ce-<name>` header (percent-encoded as in the ' +
          'HTTP binding); the body is always the whole CloudEvent JSON.',
      ),
    stream: z
      .object({
        name: z
          .string()
          .regex(/^[A-Za-z0-9_-]{1,64}$/, 'use 1-64 letters, digits, _ or -')
          .describe('JetStream stream that must capture the subjects; checked on every connect.'),
        create: z
          .boolean()
          .default(false)
          .describe('Create the stream when it does not exist. An existing stream is never changed.'),
        subjects: z
          .array(z.string().min(1))
          .min(1)
          .optional()
          .describe(
            'Subjects of a created stream; derived from the subject template when absent (placeholders ' +
              'become wildcards).',
          ),
        duplicateWindowSeconds: z
          .number()
          .int()
          .min(1)
          .max(86_400)
          .default(600)
          .describe(
            'Duplicate window of a created stream: a re-sent event id within it is dropped. Longer ' +
              'than the default retry ceiling (5 min).',
          ),
      })
      .strict()
      .optional()
      .describe('The stream the events land in. Without it, publishes go to whatever stream captures the subject.'),
    ...clientCertFields,
    dataschema: dataschemaSchema,
  })
  .strict()
  .refine(...inlineOrFile('password', 'passwordFile'))
  .refine(...inlineOrFile('token', 'tokenFile'))
  .refine(
    (c) =>
      (c.token === undefined && c.tokenFile === undefined) ||
      (c.user === undefined && c.password === undefined && c.passwordFile === undefined),
    { message: 'set either token or user/password, not both', path: ['token'] },
  )
  .refine(...certAndKeyTogether)
  .refine((c) => (c.user === undefined) === (c.password === undefined && c.passwordFile === undefined), {
    message: 'user and password go together',
    path: ['password'],
  })
  .refine((c) => !c.stream?.create || c.stream.subjects !== undefined || streamSubjectsFor(c.subject)[0] !== '>', {
    message:
      'set stream.subjects: a subject template starting with {type} cannot be turned into stream ' +
      'subjects without capturing everything (e.g. ["com.skills.changefeed.>"])',
    path: ['stream', 'subjects'],
  });

export type NatsSinkConfig = z.infer<typeof natsSinkConfigSchema>;

/** Stream subjects that capture every subject the template can render: `{type}` spans several tokens, so it ends in `>`. */
export function streamSubjectsFor(template: string): string[] {
  const tokens: string[] = [];
  for (const token of template.split('.')) {
    if (token.includes('{type}')) return [[...tokens, '>'].join('.')];
    tokens.push(token.includes('{') ? '*' : token);
  }
  return [tokens.join('.')];
}
