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
 * the tenant sections (tenantConfigSchema.ts) and the process-wide ones.
 * Layering (lowest first): these defaults < embedded defaults (demo) < YAML file < environment
 * < command-line flags. docs/configuration-reference.md is generated from this schema.
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
const unreadFeed = z.unknown().optional().describe('Not read by commands that do not serve the feed.');
const sinkNamesOnly = z
  .array(z.object({ name: z.string().min(1), type: z.string() }).passthrough())
  .min(1, 'configure at least one sink')
  .describe('Only the names and types are read by commands that do not open the sinks.');

/**
 * The configuration for commands that deliver from the store without polling (`replay`): the
 * sinks in full, but not the credential nor the feed's tokens, which may not even be mounted
 * where they run.
 */
export const replayConfigSchema = appConfigSchema.extend({
  api: z.unknown().optional().describe('Not read by commands that do not poll.'),
  feed: unreadFeed,
});

/**
 * The configuration for commands that only read the store (`status`, `dead-letters`, `plan`):
 * stateDir, the watch and budget settings and the sinks' names, not the credential, the feed's
 * tokens nor the sinks' destinations and secrets.
 */
export const inspectionConfigSchema = appConfigSchema.extend({
  api: z.unknown().optional().describe('Not read by inspection commands.'),
  sinks: sinkNamesOnly,
  feed: unreadFeed,
});

/**
 * The configuration for commands that call the service with the key but open no sink
 * (`watch retry`, `plan`'s discovery): the credential, the sinks by name and type only.
 */
export const serviceConfigSchema = appConfigSchema.extend({ sinks: sinkNamesOnly, feed: unreadFeed });

/**
 * The sections holding secrets that each view of the config does not read: an unset `${VAR}` in
 * them is no error there. What a command needs is declared by the view it loads (loadAppConfig.ts).
 */
export const UNREAD_SECRET_SECTIONS = {
  inspection: ['api', 'sinks', 'feed'],
  replay: ['api', 'feed'],
  service: ['sinks', 'feed'],
  full: [],
} as const satisfies Record<string, readonly ('api' | 'sinks' | 'feed')[]>;

/** Environment variables and the config paths they set. */
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
