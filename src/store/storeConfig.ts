import { z } from 'zod';

/**
 * Where the store lives. SQLite needs nothing set up and suits one process; PostgreSQL is shared
 * by replicas, which then lease the tenants among themselves (docs/scaling.md).
 */
export const storeConfigSchema = z
  .object({
    url: z
      .string()
      .min(1, 'must not be empty')
      .optional()
      .describe(
        'The store: `sqlite:<path>` (default `sqlite:<stateDir>/changefeed.sqlite`) or ' +
          '`postgres://user:password@host:port/database` (also `postgresql://`; `?sslmode=` and the other ' +
          'libpq parameters that node-postgres reads apply). A password here is a secret: prefer ' +
          '`passwordFile`, or CHANGEFEED_STORE_URL from a secret.',
      ),
    passwordFile: z
      .string()
      .min(1)
      .optional()
      .describe(
        'PostgreSQL only: file holding the password of the user in `url` (a Docker or Kubernetes ' +
          'secret mount), read when the store opens; one trailing newline is dropped. `url` then ' +
          'names the user and carries no password.',
      ),
    schema: z
      .string()
      .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a lower-case SQL identifier (letters, digits, _; at most 63)')
      .default('changefeed')
      .describe('PostgreSQL only: the schema holding the tables, created if missing. One schema per deployment.'),
    maxConnections: z
      .number()
      .int()
      .min(2)
      .max(100)
      .default(10)
      .describe(
        'PostgreSQL only: connections in the pool of this replica, shared by all its tenants (the tenant ' +
          'leases have 2 of their own). Statements beyond it wait in the replica, a tenant starting first; a ' +
          'wait past 60 s is STORE_BUSY, back-pressure rather than an outage (docs/scaling.md).',
      ),
    preparedStatements: z
      .boolean()
      .default(true)
      .describe(
        'PostgreSQL only: prepare each statement once per connection (parsed and planned once; about half ' +
          "the database's CPU per request). Set false behind a pooler in transaction mode that does not " +
          'carry protocol-level prepared statements (PgBouncer before 1.21, or without `max_prepared_statements`): ' +
          'every statement is then sent unnamed, parsed and planned each time.',
      ),
  })
  .strict()
  .refine((store) => store.passwordFile === undefined || store.url === undefined || urlPassword(store.url) === '', {
    message: 'set the password either in url or in passwordFile, not both',
    path: ['passwordFile'],
  })
  .refine((store) => store.passwordFile === undefined || (store.url !== undefined && POSTGRES_URL.test(store.url)), {
    message: 'passwordFile needs a postgres:// url (a SQLite store has no password)',
    path: ['passwordFile'],
  })
  .refine((store) => store.passwordFile === undefined || store.url === undefined || urlUser(store.url) !== '', {
    message: 'passwordFile needs a user in url: postgres://user@host:port/database',
    path: ['url'],
  });

const POSTGRES_URL = /^postgres(ql)?:\/\//i;

// For refinements: an unparsable URL is reported when the store opens, naming store.url.
function urlPassword(url: string): string {
  return URL.canParse(url) ? new URL(url).password : '';
}

function urlUser(url: string): string | undefined {
  return URL.canParse(url) ? new URL(url).username : undefined;
}

export type StoreConfig = z.infer<typeof storeConfigSchema>;
