import type { Command } from 'commander';
import { LeaseTable, type LeaseRow } from '../cluster/leaseTable.js';
import type { TenantRecord } from '../tenants/tenant.js';
import { openStoreBackend } from '../store/openStoreBackend.js';
import { OlderSchemaError } from '../store/storeError.js';
import type { StoreConfig } from '../store/storeConfig.js';
import { storeLocation } from '../store/storeLocation.js';
import type { TenantsReport } from './tenantsReport.js';
import { readTenants } from '../config/readTenants.js';
import { ChangefeedError } from '../errors.js';
import { scrubSecrets } from '../secrets/secretRegistry.js';
import type { CliIo } from './cliIo.js';
import { configOption, jsonOption, type CommandHost } from './commandLine.js';
import { loadTenantedConfig } from './loadAppConfig.js';
import { buildTenantsReport, formatTenantsReport } from './tenantsReport.js';

export function defineTenantsCommand(program: Command, host: CommandHost): void {
  program
    .command('tenants')
    .summary('the tenants as the daemon reads them, and who holds each')
    .description('The tenants of tenants.dir, or the one tenant "default" without it.')
    .command('list')
    .description(
      `Reads the tenants as the daemon would: each file of tenants.dir merged over the main config, or the one tenant "default" without tenants.dir, settled against the tenant records of the store (who owns each API key, the last valid text of each file), so its verdicts are the daemon's. Prints each tenant's file, whether it is valid (and why not), its sinks and what it watches, and on a PostgreSQL store which replica holds its lease. Exit 1 when any tenant file or the directory has a problem.`,
    )
    .addOption(configOption())
    .addOption(jsonOption())
    .action(host.run((options: TenantsOptions) => tenantsCommand(options, host.io)));
}

interface TenantsOptions {
  config?: string;
  json: boolean;
}

async function tenantsCommand(values: TenantsOptions, io: CliIo): Promise<number> {
  const main = loadTenantedConfig({ configFlag: values.config, env: io.env });
  const dir = main.tenants.kind === 'directory' ? main.tenants.dir : undefined;
  // Without tenants.dir a SQLite store has nothing to say: no records to settle, no leases.
  const fromStore =
    dir === undefined && storeLocation(main.process).kind === 'sqlite'
      ? { records: [] }
      : await readStore(main.process, main.process.cluster.leaseSeconds * 1000);
  // Settled against the store's records, as the daemon (every replica) settles them.
  const report = buildTenantsReport(dir, readTenants(main.tenants, [], fromStore.records));
  if (fromStore.leases) addLeases(report, fromStore.leases);
  const text = values.json ? JSON.stringify(report, null, 2) : formatTenantsReport(report);
  io.stdout.write(`${scrubSecrets(text)}\n`);
  const problems = report.problems.length + report.tenants.filter((t) => !t.valid).length;
  return problems > 0 ? 1 : 0;
}

/**
 * The tenant records of the store and, when replicas share it, its leases; opened read-only, so
 * none before a daemon created the store or brought it to this build's schema (a deployment gate
 * runs this before this build's daemon, whose first read after migrating decides from none too).
 */
async function readStore(
  config: { stateDir: string; store: StoreConfig },
  leaseMs: number,
): Promise<{ records: readonly TenantRecord[]; leases?: Map<string, LeaseRow> }> {
  let backend;
  try {
    backend = await openStoreBackend(config, {
      readonly: true,
      mustExist: true,
      applicationName: 'changefeed tenants list',
    });
    const records = await backend.tenantRecords().read();
    const shared = backend.sharedByReplicas;
    if (!shared) return { records };
    const leases = await new LeaseTable(shared.leasePool, { leaseMs }).list();
    return { records, leases: new Map(leases.map((l) => [l.tenant, l])) };
  } catch (error) {
    if (error instanceof ChangefeedError && error.code === 'STORE_MISSING') return { records: [] };
    if (error instanceof OlderSchemaError) return { records: [] };
    throw error;
  } finally {
    await backend?.close();
  }
}

/** Each tenant's lease holder, from the shared store's lease table. */
function addLeases(report: TenantsReport, leases: Map<string, LeaseRow>): void {
  for (const row of report.tenants) {
    const lease = leases.get(row.name);
    const held = lease?.holder !== undefined && lease.expiresInMs > 0;
    row.lease = {
      holder: held ? (lease.holder ?? null) : null,
      epoch: lease?.epoch ?? 0,
      expiresInSeconds: held ? Math.round(lease.expiresInMs / 1000) : null,
    };
  }
}
