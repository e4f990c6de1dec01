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
  })
  .strict();

export type TenantsConfig = z.infer<typeof tenantsConfigSchema>;
