import { parseArgs } from 'node:util';
import { readTenants } from '../config/readTenants.js';
import { ChangefeedError } from '../errors.js';
import { scrubSecrets } from '../secrets/secretRegistry.js';
import { loadTenantedConfig } from './loadAppConfig.js';
import { buildTenantsReport, formatTenantsReport } from './tenantsReport.js';

export const TENANTS_USAGE = `changefeed tenants list [--config FILE] [--json]
  Reads the tenants as the daemon would: each file of tenants.dir merged over the main config, or
  the one tenant "default" without tenants.dir. Prints each tenant's file, whether it is valid (and
  why not), its sinks and what it watches. Exit 1 when any tenant file or the directory has a problem.`;

export function tenantsCommand(argv: string[]): number {
  const [action, ...rest] = argv;
  if (action !== 'list') throw new ChangefeedError('USAGE', `expected "list"\n\n${TENANTS_USAGE}`);
  const { values } = parseArgs({
    args: rest,
    options: { config: { type: 'string', short: 'c' }, json: { type: 'boolean', default: false } },
    strict: true,
  });
  const { main } = loadTenantedConfig({ configFlag: values.config });
  const dir = main.tenants.kind === 'directory' ? main.tenants.dir : undefined;
  const report = buildTenantsReport(dir, readTenants(main.tenants));
  const text = values.json ? JSON.stringify(report, null, 2) : formatTenantsReport(report);
  process.stdout.write(`${scrubSecrets(text)}\n`);
  const problems = report.problems.length + report.tenants.filter((t) => !t.valid).length;
  return problems > 0 ? 1 : 0;
}
