import type { Command } from 'commander';
import { ChangefeedError } from '../errors.js';
import type { CliIo } from './cliIo.js';
import { configOption, tenantOption, type CommandHost, type TenantFlags } from './commandLine.js';
import { withExistingStore } from './existingStore.js';
import { loadTenantConfig } from './loadAppConfig.js';

export function defineSinksCommand(program: Command, host: CommandHost): void {
  const sinks = program
    .command('sinks')
    .summary('enable a sink that was disabled')
    .description(
      'A sink is disabled when its destination says it is gone (410) or failed as a whole for delivery.endpointBackoff.disableAfterSeconds; it stays disabled across restarts, its events pending, until enabled again.',
    );
  sinks
    .command('enable')
    .description(
      'Clears the disabled state of a sink and its run of endpoint failures; a running daemon delivers its pending events within seconds. Exit 1 when the sink was not disabled.',
    )
    .argument('<name>', 'the sink, as named in the config')
    .addOption(configOption())
    .addOption(tenantOption())
    .action(host.run((name: string, options: TenantFlags) => enableSinkCommand(name, options, host.io)));
}

async function enableSinkCommand(name: string, values: TenantFlags, io: CliIo): Promise<number> {
  const { config, tenant } = loadTenantConfig(values, io.env, 'inspection');
  if (!config.sinks.some((s) => s.name === name))
    throw new ChangefeedError(
      'USAGE',
      `no sink named "${name}" in the config (sinks: ${config.sinks.map((s) => s.name).join(', ')})`,
    );
  return withExistingStore(config, { tenant }, async (store) => {
    if (await store.sinks.enable(name)) {
      io.stdout.write(`sink ${name} enabled: its pending events go out once the daemon runs it (within seconds)\n`);
      return 0;
    }
    io.stdout.write(`sink ${name} was not disabled\n`);
    return 1;
  });
}
