import { z } from 'zod';
import { clusterConfigSchema } from '../cluster/clusterConfig.js';
import { consoleConfigSchema } from '../console/consoleConfig.js';
import { feedConfigSchema } from '../feed/feedConfig.js';
import { httpConfigSchema } from '../observe/healthServer.js';
import { storeConfigSchema } from '../store/storeConfig.js';
import { tenantsConfigSchema } from '../tenants/tenantsConfig.js';
import { tenantConfigSchema } from './tenantConfigSchema.js';

/**
 * The whole configuration, composed from the schemas each component declares next to itself:
 * the tenant sections (tenantConfigSchema.ts) and the process-wide ones; layered by loadConfig.
 * docs/configuration-reference.md is generated from this schema.
 */
export const appConfigSchema = tenantConfigSchema
  .extend({
    cluster: clusterConfigSchema
      .prefault({})
      .describe('This replica among others: its name, sent to the service, and its tenant leases.'),
    stateDir: z
      .string()
      .min(1)
      .default('state')
      .describe(
        'Directory of the state: the SQLite store (changefeed.sqlite) unless store.url says otherwise, and the lock.',
      ),
    store: storeConfigSchema
      .prefault({})
      .describe('The store: SQLite by default, or PostgreSQL shared by replicas (docs/scaling.md).'),
    http: httpConfigSchema
      .prefault({})
      .describe('Health (/healthz), readiness (/readyz) and Prometheus metrics (/metrics) over HTTP.'),
    feed: feedConfigSchema
      .default(feedConfigSchema.parse({}))
      .describe('The journal over HTTP for consumers without a broker: pages, long-polling and Server-Sent Events.'),
    console: consoleConfigSchema
      .prefault({})
      .describe('The operator console in the browser, at /console on the health server (docs/operations.md).'),
    log: z
      .object({
        level: z
          .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
          .default('info')
          .describe('Log level (CHANGEFEED_LOG_LEVEL overrides).'),
        pretty: z.boolean().default(false).describe('Readable logs for terminals instead of JSON lines.'),
      })
      .strict()
      .prefault({})
      .describe('Logging to stderr.'),
    tenants: tenantsConfigSchema
      .prefault({})
      .describe('Several companies, each with its own key, watch set and sinks, from a directory of files.'),
  })
  .strict();

export type AppConfig = z.infer<typeof appConfigSchema>;

// A section a command does not read is not validated beyond what the command uses, and its unset
// `${VAR}` references are kept as written: the command runs where that section's secrets (the key,
// the sinks' passwords and signing secrets, the feed's tokens) are not mounted.
const notPolled = z.unknown().optional().describe('Not read by commands that do not poll.');
const unreadFeed = z.unknown().optional().describe('Not read by commands that do not serve the feed.');
const sinkNamesOnly = z
  .array(z.object({ name: z.string().min(1), type: z.string() }).passthrough())
  .min(1, 'configure at least one sink')
  .describe('Only the names and types are read by commands that do not open the sinks.');

/**
 * The sections each view of the config for a command (loadAppConfig.ts) does not read in full:
 * `inspection` reads the store only, no credential, sinks by name and type (`status`,
 * `dead-letters`, `plan` without discovery); `replay` delivers from the store without polling,
 * the sinks in full, no credential; `service` calls the service with the key and opens no sink
 * (`watch retry`, `plan`'s discovery); `full` is everything a daemon reads (`check`).
 */
const VIEW_RELAXATIONS = {
  inspection: { api: notPolled, sinks: sinkNamesOnly, feed: unreadFeed },
  replay: { api: notPolled, feed: unreadFeed },
  service: { sinks: sinkNamesOnly, feed: unreadFeed },
  full: {},
};

export const CONFIG_VIEWS = {
  inspection: appConfigSchema.extend(VIEW_RELAXATIONS.inspection),
  replay: appConfigSchema.extend(VIEW_RELAXATIONS.replay),
  service: appConfigSchema.extend(VIEW_RELAXATIONS.service),
  full: appConfigSchema,
};

export type ConfigView = keyof typeof CONFIG_VIEWS;

/** The sections `view` does not read: an unset `${VAR}` in them is no error there. */
export function unreadSections(view: ConfigView): string[] {
  return Object.keys(VIEW_RELAXATIONS[view]);
}

export const ENV_MAPPING: Readonly<Record<string, string>> = {
  CHANGEFEED_API_KEY: 'api.apiKey',
  CHANGEFEED_BASE_URL: 'api.baseUrl',
  CHANGEFEED_STATE_DIR: 'stateDir',
  CHANGEFEED_LOG_LEVEL: 'log.level',
  CHANGEFEED_HTTP_PORT: 'http.port',
  CHANGEFEED_HTTP_HOST: 'http.host',
  CHANGEFEED_FEED_PORT: 'feed.port',
  CHANGEFEED_FEED_HOST: 'feed.host',
  CHANGEFEED_INSTANCE_ID: 'cluster.instanceId',
  CHANGEFEED_ADVERTISE_URL: 'cluster.advertiseUrl',
  CHANGEFEED_ADVERTISE_HEALTH_URL: 'cluster.advertiseHealthUrl',
  CHANGEFEED_STORE_URL: 'store.url',
  CHANGEFEED_TENANTS_DIR: 'tenants.dir',
};
