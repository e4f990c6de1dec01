import { z } from 'zod';

export const retryConfigSchema = z
  .object({
    initialDelayMs: z.number().int().min(1).default(1_000).describe('Ceiling of the first retry delay; each attempt doubles it (full jitter: the actual delay is random below the ceiling).'),
    maxDelayMs: z.number().int().min(1).default(300_000).describe('Largest ceiling of a retry delay.'),
    maxAttempts: z.number().int().min(0).default(0).describe('Attempts before an event becomes a dead letter; 0 retries forever.'),
    maxAgeSeconds: z.number().int().min(0).default(0).describe('Age after its first attempt at which an event becomes a dead letter; 0 means no limit.'),
  })
  .strict();

export type RetryConfig = z.infer<typeof retryConfigSchema>;

const RETRY_DEFAULTS: RetryConfig = { initialDelayMs: 1_000, maxDelayMs: 300_000, maxAttempts: 0, maxAgeSeconds: 0 };

/**
 * Fields every sink has, whatever its type. The delivery engine reads `delivery`; the sink itself
 * never sees it, because retries, batching and in-flight limits are the engine's job.
 */
export const sinkCommonSchema = z.object({
  name: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, 'use 1-64 letters, digits, _ or -')
    .describe('Unique name; delivery progress in the store is kept under it, so renaming a sink starts it afresh.'),
  delivery: z
    .object({
      batchSize: z.number().int().min(1).max(10_000).optional().describe('Most events per write; defaults to what the sink type handles best.'),
      maxInFlight: z.number().int().min(1).max(256).optional().describe('Batches written at once (different objects only); defaults per sink type.'),
      retry: retryConfigSchema.default(RETRY_DEFAULTS).describe('Retry schedule of failed events.'),
    })
    .strict()
    .default({ retry: RETRY_DEFAULTS })
    .describe('How the engine delivers to this sink.'),
});

export type SinkDeliveryConfig = z.infer<typeof sinkCommonSchema>['delivery'];
