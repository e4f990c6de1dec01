import { withExistingStore } from './existingStore.js';
import type { Command } from 'commander';
import type { CliIo } from './cliIo.js';
import { configOption, jsonOption, tenantOption, type CommandHost, type TenantFlags } from './commandLine.js';
import { DEFAULT_TENANT } from '../tenants/tenant.js';
import { scrubSecrets } from '../secrets/secretRegistry.js';
import { fetchHolderReadiness, withLiveSinkState } from './liveSinkState.js';
import { loadTenantConfig } from './loadAppConfig.js';
import { buildStatusReport, formatStatusReport } from './statusReport.js';
import { findTenantHolder } from './tenantHolder.js';

export function defineStatusCommand(program: Command, host: CommandHost): void {
  program
    .command('status')
    .summary('cursors, lag, outbox depth and per-sink progress from the store')
    .description(
      `Shows cursors, lag, outbox depth and per-sink progress from the store. Safe while the daemon runs. Sink state (active, connected) is asked live from the daemon running the tenant when it answers: on a PostgreSQL store the replica holding its lease, at its cluster.advertiseUrl; else the daemon on http.port. Otherwise the last recorded value is shown and marked "(recorded)".`,
    )
    .addOption(configOption())
    .addOption(tenantOption())
    .addOption(jsonOption())
    .action(host.run((options: StatusOptions) => statusCommand(options, host.io)));
}

interface StatusOptions extends TenantFlags {
  json: boolean;
}

async function statusCommand(values: StatusOptions, io: CliIo): Promise<number> {
  const { config, tenant } = loadTenantConfig(values, io.env, 'inspection');
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
    io.stdout.write(`${scrubSecrets(values.json ? JSON.stringify(report, null, 2) : formatStatusReport(report))}\n`);
    return 0;
  });
}
