import { z } from 'zod';

/*
 * The `delivery` and `filter` blocks every sink's configuration carries. They are read by the
 * delivery engine (deliver/), embedded by every sink type's schema (sinks/), and live here, below
 * both, so neither room imports the other. Defaults are written once, in the schemas; the
 * *_DEFAULTS constants are parsed from them.
 */

/** A delay in milliseconds, at most a day. */
const delayMs = (defaultMs: number, description: string) =>
  z.number().int().min(1).max(86_400_000).default(defaultMs).describe(description);

/** A length of time in seconds, at most a year; 0 turns the limit off. */
const limitSeconds = (defaultSeconds: number, description: string) =>
  z.number().int().min(0).max(31_536_000).default(defaultSeconds).describe(description);

export const retryConfigSchema = z
  .object({
    initialDelayMs: delayMs(
      1_000,
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
    maxAgeSeconds: limitSeconds(
      0,
      'Age after its first attempt at which an event becomes a dead letter; 0 means no limit.',
    ),
  })
  .strict();

export type RetryConfig = z.infer<typeof retryConfigSchema>;

export const RETRY_DEFAULTS: RetryConfig = retryConfigSchema.parse({});

export const circuitBreakerConfigSchema = z
  .object({
    failureThreshold: z
      .number()
      .int()
      .min(0)
      .default(5)
      .describe('Consecutive failed writes that open the circuit (pause the sink); 0 turns circuit breaking off.'),
    cooldownMs: delayMs(30_000, 'First pause once the circuit opens; after it, one probe write decides.'),
    maxCooldownMs: delayMs(600_000, 'Longest pause: each failed probe doubles the previous one up to this.'),
  })
  .strict();

export type CircuitBreakerConfig = z.infer<typeof circuitBreakerConfigSchema>;

/**
 * Svix's published schedule (docs.svix.com/retries): after the first attempt fails, 5 s, 5 min,
 * 30 min, 2 h, 5 h, 10 h, 10 h; an endpoint whose every attempt fails for 5 days is disabled.
 */
const SVIX_SCHEDULE_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];

export const endpointBackoffConfigSchema = z
  .object({
    scheduleMs: z
      .array(z.number().int().min(0).max(86_400_000))
      .min(1)
      .max(100)
      .default(SVIX_SCHEDULE_MS)
      .describe(
        'Pauses of the whole endpoint after 1, 2, 3... endpoint-level failures in a row (the last one ' +
          'repeats), each lengthened by up to 10% jitter; a Retry-After is a floor. Events stay pending ' +
          "meanwhile and keep their order. Svix's schedule by default.",
      ),
    disableAfterSeconds: limitSeconds(
      432_000,
      'Continuous endpoint-level failure (no delivery in between) after which the sink is disabled, ' +
        'across restarts, until `changefeed sinks enable <name>`; 0 never disables. 5 days, as Svix. ' +
        'The clock is kept in the store: a restart during an outage does not reset it.',
    ),
  })
  .strict();

export type EndpointBackoffConfig = z.infer<typeof endpointBackoffConfigSchema>;

const poisonConfigSchema = z
  .object({
    strikes: z
      .number()
      .int()
      .min(0)
      .max(1_000)
      .default(5)
      .describe(
        'Failed attempts after which an event travels in ever smaller batches (halved each ' +
          'attempt) until it is alone; alone and failing again while other events get through, it ' +
          'becomes a dead letter ("poison"). 0 turns the search off: such an event is retried by the ' +
          'retry schedule alone.',
      ),
  })
  .strict();

export const sinkFilterSchema = z
  .object({
    logs: z
      .array(z.enum(['career', 'skill', 'identity_provider', 'identityProvider']))
      .optional()
      .describe(
        'Only events of these logs (career, skill, identity_provider); all logs when absent. ' +
          '`identityProvider` is a deprecated spelling, taken with a warning.',
      ),
    include: z
      .array(z.string().min(1))
      .optional()
      .describe(
        'Glob patterns over `<log>.<event>` (e.g. `career.*`, `identity_provider.user_*`); only ' +
          'matching events are sent.',
      ),
    exclude: z
      .array(z.string().min(1))
      .optional()
      .describe('Glob patterns over `<log>.<event>`; matching events are not sent (wins over include).'),
  })
  .strict();

export type SinkFilter = z.infer<typeof sinkFilterSchema>;

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
      circuitBreaker: circuitBreakerConfigSchema.prefault({}).describe('Pausing a destination that keeps failing.'),
      endpointBackoff: endpointBackoffConfigSchema
        .prefault({})
        .describe(
          'Backing off a destination that fails as a whole (a webhook answering 401, 403, 404, 429, 5xx, ' +
            'or not answering) and the rule that disables it.',
        ),
      poison: poisonConfigSchema
        .prefault({})
        .describe('Narrowing a batch that keeps failing down to the one event the destination cannot take.'),
    })
    .strict()
    .prefault({})
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
