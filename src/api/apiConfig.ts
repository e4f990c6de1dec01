import { z } from 'zod';

export const apiConfigSchema = z
  .object({
    baseUrl: z
      .url({ protocol: /^https?$/, message: 'must be an http(s) URL such as https://skills.example.com' })
      .describe('Base address of the service; request paths (/api/v1/...) are appended to it.'),
    apiKey: z
      .string()
      .min(1)
      .optional()
      .describe('Secret: the API key, treated as opaque. Prefer apiKeyFile or CHANGEFEED_API_KEY.'),
    apiKeyFile: z
      .string()
      .min(1)
      .optional()
      .describe('File holding the API key (a mounted secret); re-read when it changes.'),
    caFile: z
      .string()
      .min(1)
      .optional()
      .describe(
        'PEM file of the CA certificates to trust for an https `baseUrl` (instead of the public ' +
          'CAs), for a service behind a private CA. Certificate checks stay on.',
      ),
    timeoutMs: z
      .number()
      .int()
      .min(100)
      .max(300_000)
      .default(15_000)
      .describe('Time limit of one request, headers and body.'),
    maxResponseBytes: z
      .number()
      .int()
      .min(65_536)
      .max(268_435_456)
      .default(16 * 1024 * 1024)
      .describe(
        'Largest answer read from the service; reading stops beyond it (API_RESPONSE_TOO_LARGE). ' +
          'An activity page beyond it is read again with half the entries, down to one; an entry ' +
          'larger alone is quarantined (more than 64 in one read disable the log: OVERSIZED_ENTRIES). A full page of 200 ' +
          'entries is far below the default 16 MiB.',
      ),
    maxEntryBytes: z
      .number()
      .int()
      .min(1024)
      .max(16 * 1024 * 1024)
      .default(1024 * 1024)
      .describe(
        'Largest single entry (as JSON) that is emitted; a larger one is quarantined (`changefeed ' +
          'quarantine list`) and the rest of its page processed.',
      ),
    clockToleranceSeconds: z
      .number()
      .int()
      .min(1)
      .max(86_400)
      .default(300)
      .describe(
        'A `Date` header that jumps further than this from the service clock believed so far (at ' +
          'first: the local clock) is not believed until three answers in a row agree: windows end ' +
          'at the last believable service time, so one wrong answer cannot move a cursor into the ' +
          'future.',
      ),
  })
  .strict()
  .refine((api) => (api.apiKey === undefined) !== (api.apiKeyFile === undefined), {
    message: 'set exactly one of api.apiKey (or CHANGEFEED_API_KEY) and api.apiKeyFile',
    path: ['apiKey'],
  });

export type ApiConfig = z.infer<typeof apiConfigSchema>;
