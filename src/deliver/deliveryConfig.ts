import { z } from 'zod';
import { CIRCUIT_DEFAULTS, circuitBreakerConfigSchema } from './circuitBreaker.js';
import { POISON_DEFAULTS, poisonConfigSchema } from './poisonSearch.js';
import { sinkFilterSchema } from './sinkFilter.js';

export const retryConfigSchema = z
  .object({
    initialDelayMs: z
      .number()
      .int()
      .min(1)
      .max(86_400_000)
      .default(1_000)
      .describe(
        'Ceiling of the first retry delay; each attempt doubles it (full jitter: the actual delay ' +
          'is random below the ceiling).',
      ),
    maxDelayMs: z.number().int().min(1).max(604_800_000).default(300_000).describe('Largest ceiling of a retry delay.'),
    maxAttempts: z
      .number()
      .int()
      .min(0)
      .default(0)
      .describe('Attempts before an event becomes a dead letter; 0 retries forever.'),
    maxAgeSeconds: z
      .number()
      .int()
      .min(0)
      .max(31_536_000)
      .default(0)
      .describe('Age after its first attempt at which an event becomes a dead letter; 0 means no limit.'),
  })
  .strict();

export type RetryConfig = z.infer<typeof retryConfigSchema>;

export const RETRY_DEFAULTS: RetryConfig = {
  initialDelayMs: 1_000,
  maxDelayMs: 300_000,
  maxAttempts: 0,
  maxAgeSeconds: 0,
};

/**
 * The `delivery` block of a sink. Sink types differ in what a sane retry schedule is (a broker that
 * is down should be waited for; a webhook endpoint gets a bounded schedule), so the retry
 * defaults are a parameter.
 */
export function deliverySchema(retryDefaults: RetryConfig) {
  return z
    .object({
      batchSize: z
        .number()
        .int()
        .min(1)
        .max(10_000)
        .optional()
        .describe('Most events per write; defaults to what the sink type handles best.'),
      maxInFlight: z
        .number()
        .int()
        .min(1)
        .max(256)
        .optional()
        .describe(
          'Writes in flight at once (concurrency); only different objects are written in parallel. ' +
            'Defaults per sink type.',
        ),
      retry: retryConfigSchema.default(retryDefaults).describe('Retry schedule of failed events.'),
      circuitBreaker: circuitBreakerConfigSchema
        .default(CIRCUIT_DEFAULTS)
        .describe('Pausing a destination that keeps failing.'),
      poison: poisonConfigSchema
        .default(POISON_DEFAULTS)
        .describe('Narrowing a batch that keeps failing down to the one event the destination cannot take.'),
    })
    .strict()
    .default({ retry: retryDefaults, circuitBreaker: CIRCUIT_DEFAULTS, poison: POISON_DEFAULTS })
    .describe('How the engine delivers to this sink.');
}

/**
 * Fields every sink has, whatever its type. The delivery engine reads `delivery` and `filter`;
 * the sink itself never sees them, because retries, batching, in-flight limits and filtering are
 * the engine's job.
 */
export const sinkCommonSchema = z.object({
  name: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, 'use 1-64 letters, digits, _ or -')
    .describe('Unique name; delivery progress in the store is kept under it, so renaming a sink starts it afresh.'),
  delivery: deliverySchema(RETRY_DEFAULTS),
  filter: sinkFilterSchema.optional().describe('Which events this sink receives; all when absent.'),
  startFrom: z
    .enum(['now', 'journal'])
    .default('now')
    .describe(
      'Where a sink added to an existing store starts: `now` receives what is ingested from then ' +
        'on; `journal` first receives every event still in the journal.',
    ),
});

export type SinkDeliveryConfig = z.infer<typeof sinkCommonSchema>['delivery'];
