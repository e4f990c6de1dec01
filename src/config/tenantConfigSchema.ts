import { z } from 'zod';
import { apiConfigSchema } from '../api/apiConfig.js';
import { eventsConfigSchema } from '../events/cloudEvent.js';
import { tenantFeedTokensSchema } from '../feed/feedConfig.js';
import { budgetConfigSchema } from '../poll/readBudget.js';
import { watchConfigSchema } from '../poll/watchConfig.js';
import { sinkConfigSchema } from '../sinks/sinkRegistry.js';

const sinksSchema = z
  .array(sinkConfigSchema)
  .min(1, 'configure at least one sink')
  .superRefine((sinks, ctx) => {
    const seen = new Set<string>();
    sinks.forEach((sink, index) => {
      if (seen.has(sink.name))
        ctx.addIssue({ code: 'custom', path: [index, 'name'], message: `duplicate sink name "${sink.name}"` });
      seen.add(sink.name);
    });
  });

/**
 * What one tenant (one company: one API key, one reads bucket) is configured with. Without
 * `tenants.dir` these sections sit at the top of the config file and make the tenant `default`;
 * with it, each tenant file holds them, merged over the main file's (docs/tenants.md).
 */
export const tenantConfigSchema = z
  .object({
    api: apiConfigSchema.describe('The service to poll.'),
    watch: watchConfigSchema.prefault({}).describe('Which activity logs to poll, and how.'),
    budget: budgetConfigSchema.prefault({}).describe('The reads bucket: 1,000 GET requests per hour per key.'),
    events: eventsConfigSchema.prefault({}).describe('Shape of the emitted CloudEvents.'),
    sinks: sinksSchema.describe('Where events go; each sink is delivered to independently.'),
    journal: z
      .object({
        retentionDays: z
          .number()
          .min(0)
          .default(7)
          .describe('Delivered events stay in the store this long (for replay), then are pruned.'),
      })
      .strict()
      .prefault({})
      .describe('The event journal in the store.'),
    feed: tenantFeedTokensSchema
      .optional()
      .describe(
        "In a tenant file: the bearer tokens that read this tenant's pull feed, and no other tenant's. Never " +
          "inherited from the main file, whose `feed` section is the process's (the feed's listener and limits).",
      ),
  })
  .strict();

export type TenantConfig = z.infer<typeof tenantConfigSchema>;

/** The top-level sections that belong to a tenant; every other section is process-wide. */
export const TENANT_SECTIONS = ['api', 'watch', 'budget', 'events', 'sinks', 'journal'] as const;

const CREDENTIAL_IN_MAIN_FILE =
  'with tenants.dir set, each tenant file sets its own api.apiKey or api.apiKeyFile (a key has one ' +
  'reads bucket); remove it from the main config and unset CHANGEFEED_API_KEY';

const notInMainFile = z
  .unknown()
  .refine((value) => value === undefined, { message: CREDENTIAL_IN_MAIN_FILE })
  .optional();

/**
 * The tenant sections of the main file when `tenants.dir` is set: defaults for every tenant file.
 * The sections that have defaults are checked as usual; `api` needs no `baseUrl` (a tenant file
 * may give it) and must not hold a credential; `sinks`, when given, is the whole default list.
 */
export const tenantDefaultsSchema = tenantConfigSchema.extend({
  api: z
    .object({
      ...apiConfigSchema.shape,
      baseUrl: apiConfigSchema.shape.baseUrl.optional(),
      apiKey: notInMainFile,
      apiKeyFile: notInMainFile,
    })
    .strict()
    .optional()
    .describe("Defaults of every tenant's `api`."),
  sinks: sinksSchema.optional().describe('The sinks of every tenant file that sets none.'),
});
