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
          'CHANGEFEED_STORE_URL from a secret.',
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
      .describe('PostgreSQL only: connections in the pool of this replica, shared by all its tenants.'),
  })
  .strict();

export type StoreConfig = z.infer<typeof storeConfigSchema>;
