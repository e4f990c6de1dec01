import type { Command } from 'commander';
import { type CheckResult, formatCheck } from './checkResult.js';
import { writeLine, type CliIo } from './cliIo.js';
import { configOption, tenantOption, type CommandHost, type TenantFlags } from './commandLine.js';
import { checkConsole } from './consoleCheck.js';
import { checkFeed } from './feedCheck.js';
import { checkTenantHolder } from './holderCheck.js';
import { DEFAULT_TENANT } from '../tenants/tenant.js';
import { loadTenantConfig } from './loadAppConfig.js';
import { checkConfiguredIds, checkDiscoveryLists, checkPing } from './serviceChecks.js';
import { openServiceSession } from './serviceSession.js';
import { checkSinks } from './sinkChecks.js';
import { checkStorePassword } from './storePasswordCheck.js';

export function defineCheckCommand(program: Command, host: CommandHost): void {
  program
    .command('check')
    .summary('validate the config, ping the service and connect to every sink')
    .description(
      `Validates the configuration, pings the service, reads each configured career and skill log once (--no-ids skips these reads), reads one page of each list discovery uses, and connects to every sink (--probe-sinks also sends each webhook one signed test event). One line per check; exits 1 on any problem. The reads it spends from the key's bucket are counted and shown. With tenants.dir, --tenant names the tenant checked: its file, its key, its watch set and sinks. On a PostgreSQL store it also says which replica holds the tenant and where its feed is served.`,
    )
    .addOption(configOption())
    .addOption(tenantOption())
    .option('--no-ids', 'skip reading the configured career and skill logs')
    .option('--probe-sinks', 'send each webhook sink one signed test event', false)
    .action(host.run((options: CheckOptions) => checkCommand(options, host.io)));
}

interface CheckOptions extends TenantFlags {
  /** False with --no-ids. */
  ids: boolean;
  probeSinks: boolean;
}

async function checkCommand(values: CheckOptions, io: CliIo): Promise<number> {
  const { config, file, tenant } = loadTenantConfig(values, io.env, 'full');
  const out = (line: string): void => writeLine(io.stdout, line);
  const of = tenant === DEFAULT_TENANT ? '' : `of tenant ${tenant} `;
  out(`config ${of}${file ?? '(defaults and environment only)'} is valid`);
  out(`  service: ${config.api.baseUrl}`);
  out(
    `  watching: careers ${describeSet(config.watch.careers)}, skills ${describeSet(config.watch.skills)}, ` +
      `identity-provider log ${config.watch.identityProviderEvents ? 'on' : 'off'}`,
  );
  out(`  sinks: ${config.sinks.map((s) => `${s.name} (${s.type})`).join(', ')}`);
  const results: CheckResult[] = [];
  const report = (found: (CheckResult | undefined)[]): void => {
    for (const r of found) if (r) out(formatCheck(r));
    results.push(...found.filter((r) => r !== undefined));
  };
  const session = openServiceSession(config, io.env);
  try {
    const ping = await checkPing(session);
    report([ping]);
    if (ping.ok) {
      if (!values.ids) out('skipped: reading the configured ids (--no-ids)');
      else report(await checkConfiguredIds(config, session));
      report(await checkDiscoveryLists(config, session));
    } else {
      out('skipped: the configured ids and discovery lists (the ping failed)');
    }
    out(`reads: ${session.describeSpend()}`);
  } finally {
    await session.close();
  }
  report(await checkSinks(config, { probeWebhooks: values.probeSinks, tenant }));
  report([checkFeed(config, tenant), checkConsole(config), checkStorePassword(config)]);
  report([await checkTenantHolder(config, tenant)]);
  const problems = results.filter((r) => !r.ok).length;
  out(problems === 0 ? 'all checks passed' : `${problems} problem${problems === 1 ? '' : 's'} found`);
  return problems === 0 ? 0 : 1;
}

function describeSet(set: { ids: string[]; discover: boolean }): string {
  return set.discover ? `${set.ids.length} listed, discovery on` : `${set.ids.length} listed`;
}
