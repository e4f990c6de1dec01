import { z } from 'zod';

/** The `tenants` section: where the per-company files live and how often the directory is read again. */
export const tenantsConfigSchema = z
  .object({
    dir: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Directory of one YAML file per tenant (company), named `<tenant>.yaml` or `<tenant>.yml`. ' +
          'Each file holds the tenant sections (`api`, `watch`, `budget`, `events`, `sinks`, ' +
          '`journal`), merged over the same sections of this file. Unset: one tenant, `default`, ' +
          'built from this file. See docs/tenants.md.',
      ),
    rescanSeconds: z
      .number()
      .min(1)
      .max(3600)
      .default(5)
      .describe(
        'The directory is read again this often, besides file-system notifications, which miss ' +
          'changes on some mounts (a Kubernetes ConfigMap swaps a `..data` symlink).',
      ),
    forgetAfterSeconds: z
      .number()
      .min(1)
      .max(30 * 24 * 3600)
      .default(3600)
      .describe(
        "How long a tenant's record in the store (the API key it owns, its last valid file) outlives " +
          'its file: measured on the store clock from the first read that missed the file, reset when ' +
          'the file is back. Until then no other tenant may take its key, and a file turned invalid ' +
          'meanwhile still runs on its last valid configuration; a replica reading a wrongly mounted ' +
          'directory for less than this forgets nothing. See docs/tenants.md.',
      ),
  })
  .strict();
