import { z } from 'zod';
import { sinkCommonSchema } from '../sinkContract/deliveryConfig.js';
import { TABLE_NAME } from './postgresTable.js';
import { connectTimeoutMs, percentDecodes, timeLimitMs, urlOrUndefined } from './sinkConfigFields.js';

export const postgresSinkConfigSchema = sinkCommonSchema
  .extend({
    type: z.literal('postgres'),
    url: z
      .url({ protocol: /^postgres(ql)?$/, message: 'must be a postgres:// or postgresql:// URL' })
      .refine((text) => {
        // The sink decodes the password to keep it out of logs; a stray `%` would throw there.
        const url = urlOrUndefined(text);
        return url === undefined || (percentDecodes(url.username) && percentDecodes(url.password));
      }, 'the user or password in url is not valid percent-encoding: write a literal % as %25')
      .describe(
        'Server and database, `postgres://user@host:5432/db`; libpq query parameters such as ' +
          '`sslmode=verify-full` apply. A password in the URL is treated as a secret, but prefer `passwordFile`.',
      ),
    passwordFile: z
      .string()
      .min(1)
      .optional()
      .describe('File holding the password (a Docker or Kubernetes secret mount); one trailing newline is dropped.'),
    table: z
      .string()
      .regex(TABLE_NAME, 'use `name` or `schema.name`: letters, digits, _ and $, at most 63 characters each')
      .default('changefeed_events')
      .describe(
        'Table the events land in, optionally schema-qualified (`analytics.changefeed_events`). Quoted ' +
          'as written, so the case counts.',
      ),
    createTable: z
      .boolean()
      .default(true)
      .describe(
        'Create the table (and its schema and indexes) when missing. Turn off when the role may only ' +
          'INSERT into a table an administrator created.',
      ),
    connectTimeoutMs: connectTimeoutMs(
      'A connection not ready (TCP, TLS and authentication) within this time counts as failed.',
    ),
    timeoutMs: timeLimitMs(
      30_000,
      300_000,
      'A batch the server has not committed within this time counts as a lost connection: the ' +
        'connection is closed (rolling the transaction back) and the batch sent again.',
    ),
  })
  .strict()
  .refine((c) => !(c.passwordFile && urlOrUndefined(c.url)?.password), {
    message: 'set the password either in url or in passwordFile, not both',
    path: ['passwordFile'],
  });

export type PostgresSinkConfig = z.infer<typeof postgresSinkConfigSchema>;
