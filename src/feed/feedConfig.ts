import { z } from 'zod';

export const feedConfigSchema = z
  .object({
    enabled: z
      .boolean()
      .default(false)
      .describe(
        'Serve the journal over HTTP on the `http` server: `GET /v1/events` (pages, long-polling) and ' +
          '`GET /v1/events/stream` (Server-Sent Events). Needs `http.port` and at least one token.',
      ),
    tokens: z
      .array(
        z
          .string()
          .min(16, 'a feed token needs at least 16 characters')
          .regex(/^[\x21-\x7e]+$/, 'a feed token is printable ASCII without spaces (it travels in a header)'),
      )
      .default([])
      .describe('Secret: bearer tokens that may read the feed. Prefer `${VAR}` or `tokenFiles` to writing them here.'),
    tokenFiles: z
      .array(z.string().min(1))
      .default([])
      .describe('Files each holding one bearer token (a secret mount); read at start.'),
    maxPageSize: z
      .number()
      .int()
      .min(1)
      .max(10_000)
      .default(1_000)
      .describe('Largest `limit` a page request may ask for.'),
    defaultPageSize: z
      .number()
      .int()
      .min(1)
      .max(10_000)
      .default(100)
      .describe('Events per page when no `limit` is given.'),
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
  })
  .strict();

export type FeedConfig = z.infer<typeof feedConfigSchema>;
