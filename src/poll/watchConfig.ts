import { z } from 'zod';
import { listEnvelopeSchema } from '../api/listReader.js';
import { scheduleConfigSchema } from '../schedule/scheduleConfig.js';

const objectSetSchema = z
  .object({
    ids: z.array(z.string().min(1)).default([]).describe('Ids to watch.'),
    discover: z
      .boolean()
      .default(false)
      .describe('Also watch every object the list endpoint returns, found on the discovery schedule.'),
  })
  .strict();

const sortOrderSchema = z
  .enum(['auto', 'newest-first', 'oldest-first'])
  .default('auto')
  .describe(
    'The spec does not say how the log is sorted; `auto` detects it from performedAt and reads ' +
      'to the end when it cannot tell.',
  );

const startFromSchema = z.union([
  z.literal('now'),
  z.iso.datetime({ offset: true, message: 'must be "now" or an ISO 8601 timestamp such as 2026-01-01T00:00:00Z' }),
]);

export const watchConfigSchema = z
  .object({
    careers: objectSetSchema.default({ ids: [], discover: false }).describe('Career activity logs to poll.'),
    skills: objectSetSchema.default({ ids: [], discover: false }).describe('Skill version logs to poll.'),
    identityProviderEvents: z.boolean().default(true).describe('Poll the company-wide identity-provider log.'),
    startFrom: startFromSchema
      .default('now')
      .describe(
        'Where a newly watched log starts: `now` records the position and emits nothing older; a ' +
          'timestamp backfills history from then.',
      ),
    overlapSeconds: z
      .number()
      .int()
      .min(0)
      .max(86_400)
      .default(300)
      .describe(
        'Each window starts this long before the previous one ended, to catch entries recorded ' +
          'late; duplicates are dropped by id.',
      ),
    pollIntervalSeconds: z
      .number()
      .min(0)
      .max(86_400)
      .default(60)
      .describe('Shortest time between two polls of one log. The read budget may space polls further apart.'),
    concurrency: z
      .number()
      .int()
      .min(1)
      .max(16)
      .default(2)
      .describe('Polls in flight at once (requests still leave one at a time, paced by the budget).'),
    sortOrder: z
      .object({ career: sortOrderSchema, skill: sortOrderSchema, identity_provider: sortOrderSchema })
      .strict()
      .default({ career: 'auto', skill: 'auto', identity_provider: 'auto' })
      .describe('Sort order of each log.'),
    discovery: z
      .object({
        schedule: z
          .string()
          .default('*/15 * * * *')
          .describe('Cron expression for re-reading the career and skill lists (5 or 6 fields).'),
        envelope: listEnvelopeSchema
          .default({ itemsPath: 'data', idField: 'id', pageSize: 200 })
          .describe('Shape of list responses, which the spec does not show.'),
      })
      .strict()
      .default({ schedule: '*/15 * * * *', envelope: { itemsPath: 'data', idField: 'id', pageSize: 200 } })
      .describe('Finding careers and skills to watch.'),
    schedule: scheduleConfigSchema
      .prefault({})
      .describe('How the read budget is spread over the watched logs: adaptive to their change rates, or round-robin.'),
  })
  .strict();

export type WatchConfig = z.infer<typeof watchConfigSchema>;
