import { z } from 'zod';
import { listEnvelopeSchema } from '../api/listReader.js';
import { parseLogName } from '../logs.js';
import { scheduleConfigSchema } from '../schedule/scheduleConfig.js';
import { cronProblem } from './discoverySchedule.js';

const objectSetSchema = z
  .object({
    ids: z.array(z.string().min(1)).default([]).describe('Ids to watch.'),
    discover: z
      .boolean()
      .default(false)
      .describe('Also watch every object the list endpoint returns, found on the discovery schedule.'),
  })
  .strict();

const SORT_ORDER_NOTE =
  'The spec does not say how the log is sorted; `auto` detects it from performedAt and reads to the end when it cannot tell.';

const sortOrderEnum = z.enum(['auto', 'newest-first', 'oldest-first']);
const sortOrderSchema = sortOrderEnum.default('auto').describe(SORT_ORDER_NOTE);

/**
 * One sort order per log, keyed by the log's name. The identity-provider log's key has no default
 * of its own so that its deprecated spelling can stand in for it, and so that a file giving both
 * is refused rather than one silently winning.
 */
const sortOrdersSchema = z
  .object({
    career: sortOrderSchema,
    skill: sortOrderSchema,
    identity_provider: sortOrderEnum.optional().describe(`${SORT_ORDER_NOTE} \`auto\` when unset.`),
    identityProvider: sortOrderEnum
      .optional()
      .describe('Deprecated spelling of `identity_provider`, taken with a warning.'),
  })
  .strict()
  .refine((o) => o.identity_provider === undefined || o.identityProvider === undefined, {
    message: 'is the deprecated spelling of identity_provider; write identity_provider only',
    path: ['identityProvider'],
  })
  // Object.assign: a spread followed by a property gives each tenant's object a hidden class of its own on Node 20.
  .transform(({ identity_provider, ...rest }) =>
    Object.assign({}, rest, { identity_provider: identity_provider ?? rest.identityProvider ?? 'auto' }),
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
    sortOrder: sortOrdersSchema.prefault({}).describe('Sort order of each log.'),
    discovery: z
      .object({
        schedule: z
          .string()
          .superRefine((expression, ctx) => {
            const problem = cronProblem(expression);
            if (problem) ctx.addIssue({ code: 'custom', message: problem });
          })
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

/** What the watch section says in a deprecated spelling, one note each, for the log at start. */
export function watchConfigDeprecations(watch: WatchConfig): string[] {
  return Object.keys(watch.sortOrder).flatMap((key) => {
    const note = parseLogName(key)?.deprecated;
    return note ? [`watch.sortOrder: ${note}`] : [];
  });
}
