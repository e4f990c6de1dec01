import { withExistingStore } from './existingStore.js';
import { parseArgs } from 'node:util';
import { DEFAULT_TENANT } from '../tenants/tenant.js';
import { scrubSecrets } from '../secrets/secretRegistry.js';
import { fetchHolderReadiness, withLiveSinkState } from './liveSinkState.js';
import { loadTenantInspectionConfig } from './loadAppConfig.js';
import { buildStatusReport, formatStatusReport } from './statusReport.js';
import { findTenantHolder } from './tenantHolder.js';

export const STATUS_USAGE = `changefeed status [--config FILE] [--tenant NAME] [--json]
  Shows cursors, lag, outbox depth and per-sink progress from the store. Safe while the daemon runs.
  Sink state (active, connected) is asked live from the daemon running the tenant when it answers:
  on a PostgreSQL store the replica holding its lease, at its cluster.advertiseUrl; else the daemon
  on http.port. Otherwise the last recorded value is shown and marked "(recorded)".`;

export async function statusCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string', short: 'c' },
      tenant: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const { config, tenant } = loadTenantInspectionConfig({ configFlag: values.config, tenant: values.tenant });
  const checkPrefix = tenant === DEFAULT_TENANT ? '' : `${tenant}/`;
  return withExistingStore(config, { readonly: true, tenant }, async (store, _, backend) => {
    const holder = await findTenantHolder(backend, tenant, config.cluster.leaseSeconds * 1000);
    const live = await fetchHolderReadiness(config.http, holder, checkPrefix, tenant);
    const report = withLiveSinkState(
      await buildStatusReport(store, Date.now()),
      live,
      config.sinks.map((s) => s.name),
      checkPrefix,
    );
    // Errors recorded by sinks and polls may quote a URL with credentials or an echoed secret.
    process.stdout.write(
      `${scrubSecrets(values.json ? JSON.stringify(report, null, 2) : formatStatusReport(report))}\n`,
    );
    return 0;
  });
}
