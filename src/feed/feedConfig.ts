import { z } from 'zod';
import { writeTimeoutSecondsSchema } from '../writeWithin.js';
import { headersTimeoutSecondsSchema, listenerPortSchema, maxConnectionsSchema } from '../boundedListener.js';

const tokenSchema = z
  .string()
  .min(16, 'a feed token needs at least 16 characters')
  .regex(/^[\x21-\x7e]+$/, 'a feed token is printable ASCII without spaces (it travels in a header)');

/** Events in one page. */
const pageSizeSchema = z.number().int().min(1).max(10_000);

/**
 * The tokens that read one tenant's feed: in a tenant file, that tenant's only; in the main file
 * of a daemon without `tenants.dir`, the tenant `default`'s.
 */
export const tenantFeedTokensSchema = z
  .object({
    tokens: z
      .array(tokenSchema)
      .default([])
      .describe(
        "Secret: bearer tokens that read this tenant's feed, and no other tenant's. Prefer `${VAR}` or " +
          '`tokenFiles` to writing them here. With `tenants.dir` they belong in the tenant files.',
      ),
    tokenFiles: z
      .array(z.string().min(1))
      .default([])
      .describe('Files each holding one bearer token of this tenant (a secret mount); read when the tenant starts.'),
  })
  .strict();

export const feedConfigSchema = z
  .object({
    enabled: z
      .boolean()
      .default(false)
      .describe(
        'Serve the journal over HTTP on its own listener (`feed.port`): `GET /v1/events` and ' +
          '`/v1/tenants/<tenant>/events` (pages, long-polling) and `.../stream` (Server-Sent Events). ' +
          'Needs `feed.port` and at least one token.',
      ),
    port: listenerPortSchema.describe(
      "Port of the feed's own listener, apart from `http.port` (health, readiness, metrics): a flood of " +
        'feed clients cannot starve the probes. Required with `enabled`.',
    ),
    host: z.string().default('127.0.0.1').describe('Interface the feed listener binds to; loopback unless set.'),
    maxConnections: maxConnectionsSchema(512).describe(
      'Most connections the feed listener holds at once (pages, long-polls, streams); more are closed as ' +
        'they arrive, before any token is checked.',
    ),
    headersTimeoutSeconds: headersTimeoutSecondsSchema.describe(
      'A client must send its request head within this many seconds of connecting, or its connection is ' +
        'closed: half-open connections do not hold slots of `maxConnections` for long.',
    ),
    ...tenantFeedTokensSchema.shape,
    allTenantsTokens: z
      .array(tokenSchema)
      .default([])
      .describe(
        "Secret: bearer tokens that read every tenant's feed (an operator's, a platform pipeline's). Only " +
          'in the main file; a token in `tokens` reads one tenant.',
      ),
    allTenantsTokenFiles: z
      .array(z.string().min(1))
      .default([])
      .describe('Files each holding one bearer token that reads every tenant; read at start.'),
    maxPageSize: pageSizeSchema.default(1_000).describe('Largest `limit` a page request may ask for.'),
    defaultPageSize: pageSizeSchema.default(100).describe('Events per page when no `limit` is given.'),
    maxWaitSeconds: z
      .number()
      .int()
      .min(0)
      .max(300)
      .default(30)
      .describe('Longest `wait` (long-polling) a page request may ask for; keep it below proxy idle timeouts.'),
    heartbeatSeconds: z
      .number()
      .int()
      .min(1)
      .max(300)
      .default(15)
      .describe('An idle stream gets a comment line this often, so proxies do not cut it.'),
    writeTimeoutSeconds: writeTimeoutSecondsSchema.describe(
      'A stream or page whose client takes none of a part of events (or a heartbeat) for this many seconds is ' +
        'cut off, freeing its slot of `maxStreamsPerToken` or `maxPagesPerToken` and the events it was sent: a ' +
        'client that stops reading cannot hold them for ever. Keep it above the time a slow client needs to ' +
        'read one page.',
    ),
    maxStreamsPerToken: z
      .number()
      .int()
      .min(1)
      .max(10_000)
      .default(10)
      .describe(
        'Live streams one token may hold open at once, and as many long-polls (`wait`) waiting at once; ' +
          'one more of either is refused with 429.',
      ),
    maxPagesPerToken: z
      .number()
      .int()
      .min(1)
      .max(1_000)
      .default(4)
      .describe(
        'Page requests one token may have being read and written at once; one more is refused with 429 and ' +
          '`Retry-After`. With `maxPageBytes` it bounds the memory one client can take.',
      ),
    maxPageBytes: z
      .number()
      .int()
      .min(65_536)
      .max(67_108_864)
      .default(4_194_304)
      .describe(
        'Most bytes of events one page (and one write of a stream) reads from the store; a page stops ' +
          'before it (always holding one event), and `Link` continues after the last event sent.',
      ),
  })
  .strict();

export type FeedConfig = z.infer<typeof feedConfigSchema>;
