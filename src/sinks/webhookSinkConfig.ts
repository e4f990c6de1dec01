import { z } from 'zod';
import { certAndKeyTogether, clientCertFields } from '../tlsFiles.js';
import { dataschemaSchema } from './dataSchemaAttribute.js';
import { deliverySchema, sinkCommonSchema, type RetryConfig } from '../sinkContract/deliveryConfig.js';
import { caFile, timeLimitMs } from './sinkConfigFields.js';
import { isWebhookSecret } from './standardWebhookSignature.js';

/**
 * Retries of an event the endpoint refused with `retryClientErrors` on: about a day (some 25
 * attempts with full jitter under a 2-hour ceiling), like Svix's schedule (about 28 hours), before
 * it becomes a dead letter. An endpoint failing as a whole waits on delivery.endpointBackoff instead.
 */
export const WEBHOOK_RETRY_DEFAULTS: RetryConfig = {
  initialDelayMs: 5_000,
  maxDelayMs: 7_200_000,
  maxAttempts: 30,
  maxAgeSeconds: 86_400,
};

const secretSchema = z
  .string()
  .refine(isWebhookSecret, 'must be a Standard Webhooks secret: "whsec_" followed by base64 of at least 16 bytes');

export const webhookSinkConfigSchema = sinkCommonSchema
  .extend({
    type: z.literal('webhook'),
    url: z
      .url({ protocol: /^https?$/, message: 'must be an http(s) URL' })
      .describe('Endpoint that receives one POST per event.'),
    secret: secretSchema.optional().describe('Secret: signs every request (Standard Webhooks, `whsec_...`).'),
    secrets: z
      .array(secretSchema)
      .min(1)
      .optional()
      .describe('Secret: several signing secrets during a rotation; each request carries a signature for each.'),
    secretFile: z
      .string()
      .min(1)
      .optional()
      .describe('File holding the signing secret (one per line for a rotation); re-read when it changes.'),
    mode: z
      .enum(['structured', 'binary'])
      .default('structured')
      .describe(
        '`structured`: the CloudEvent as the JSON body (application/cloudevents+json); `binary`: ' +
          'attributes as ce-* headers and the entry as the body.',
      ),
    timeoutMs: timeLimitMs(15_000, 300_000, 'A request that has not answered 2xx within this time counts as failed.'),
    headers: z.record(z.string(), z.string()).default({}).describe('Static headers added to every request.'),
    retryClientErrors: z
      .boolean()
      .default(false)
      .describe(
        'Retry event-level 4xx answers (400, 409, 413, 415, 422 and the other 4xx not listed as ' +
          'endpoint-level) on delivery.retry instead of dead-lettering them at once.',
      ),
    caFile: caFile(
      'PEM file of CA certificates to trust, for endpoints with a private CA. Certificate checks stay on.',
    ),
    ...clientCertFields,
    dataschema: dataschemaSchema,
    delivery: deliverySchema(WEBHOOK_RETRY_DEFAULTS),
  })
  .strict()
  .refine((c) => [c.secret, c.secrets, c.secretFile].filter((v) => v !== undefined).length <= 1, {
    message: 'set at most one of secret, secrets and secretFile',
    path: ['secret'],
  })
  .refine(...certAndKeyTogether);

export type WebhookSinkConfig = z.infer<typeof webhookSinkConfigSchema>;
