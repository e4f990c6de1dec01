import { z } from 'zod';

export const CONSOLE_ROLES = ['read-only', 'operator'] as const;
/** `read-only` sees every view; `operator` may also retry dead letters and queue replays. */
export type ConsoleRole = (typeof CONSOLE_ROLES)[number];

const roleSchema = z
  .enum(CONSOLE_ROLES)
  .default('read-only')
  .describe('`read-only` sees every view; `operator` may also retry dead letters and queue replays.');

const tokenSchema = z
  .string()
  .min(16, 'a console token needs at least 16 characters')
  .regex(/^[\x21-\x7e]+$/, 'a console token is printable ASCII without spaces');

export const consoleConfigSchema = z
  .object({
    enabled: z
      .boolean()
      .default(false)
      .describe(
        'Serve the operator console at `/console` on the health server (`http.port`): tenants, logs, sinks, ' +
          'dead letters, replay and a live tail in the browser. Needs `http.port` and at least one token.',
      ),
    tokens: z
      .array(
        z
          .object({
            token: tokenSchema.describe('Secret: what the operator types into the sign-in form.'),
            role: roleSchema,
          })
          .strict(),
      )
      .default([])
      // Not described as a secret as a whole: the roles beside the tokens would be scrubbed from every page.
      .describe('Sign-in tokens of the console, each with its role. Prefer `${VAR}` or `tokenFiles` for the token.'),
    tokenFiles: z
      .array(
        z
          .object({
            file: z.string().min(1).describe('A file holding one token (a secret mount).'),
            role: roleSchema,
          })
          .strict(),
      )
      .default([])
      .describe('Sign-in tokens read from files, each with its role; read at start.'),
    sessionMinutes: z
      .number()
      .int()
      .min(5)
      .max(10_080)
      .default(480)
      .describe(
        'How long a sign-in lasts. The session cookie is signed, never holds the token, and ends early ' +
          'when its token is removed from the config.',
      ),
    maxTailsPerSession: z
      .number()
      .int()
      .min(1)
      .max(100)
      .default(4)
      .describe('Live tails (open Server-Sent Events streams) one session may hold at once.'),
    maxTails: z
      .number()
      .int()
      .min(1)
      .max(1_000)
      .default(32)
      .describe(
        'Live tails the console holds at once, every session together: each holds a connection of ' +
          '`http.maxConnections` and reads the journal every 2 seconds, and signing in again gives a new session.',
      ),
  })
  .strict();

export type ConsoleConfig = z.infer<typeof consoleConfigSchema>;
