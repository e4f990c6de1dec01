import { withExistingStore } from './existingStore.js';
import type { Command } from 'commander';
import type { LogKind } from '../logs.js';
import { scrubSecrets } from '../secrets/secretRegistry.js';
import { loadTenantConfig } from './loadAppConfig.js';
import type { CliIo } from './cliIo.js';
import { configOption, jsonOption, tenantOption, type CommandHost, type TenantFlags } from './commandLine.js';
import { logOption, numberIn } from './optionParsers.js';
import { terminalSafe } from './terminalText.js';

export function defineQuarantineCommand(program: Command, host: CommandHost): void {
  program
    .command('quarantine')
    .summary('entries the service sent that could not become events')
    .description('Entries the service sent that could not become events. Safe while the daemon runs.')
    .command('list')
    .description(
      `Shows entries the service sent that could not become events (no id, a performedAt that does not parse, larger than api.maxEntryBytes): their log, the reason and the raw JSON. They were not emitted; the rest of their page was, and the log went on. Safe while the daemon runs.`,
    )
    .addOption(configOption())
    .addOption(tenantOption())
    .addOption(logOption('only entries of this log', host.io))
    .option('--limit <n>', 'at most this many, newest first', numberIn({ min: 1, max: 100_000, integer: true }), 100)
    .addOption(jsonOption())
    .action(host.run((options: QuarantineOptions) => quarantineCommand(options, host.io)));
}

interface QuarantineOptions extends TenantFlags {
  log?: LogKind;
  limit: number;
  json: boolean;
}

async function quarantineCommand(values: QuarantineOptions, io: CliIo): Promise<number> {
  const { log, limit } = values;
  const { config, tenant } = loadTenantConfig(values, io.env, 'inspection');
  return withExistingStore(config, { readonly: true, tenant }, async (store) => {
    const records = await store.quarantine.list({ ...(log ? { log } : {}), ...(limit ? { limit } : {}) });
    if (values.json) {
      io.stdout.write(`${scrubSecrets(JSON.stringify(records, null, 2))}\n`);
    } else if (records.length === 0) {
      io.stdout.write('no quarantined entries\n');
    } else {
      for (const r of records) {
        const raw = r.raw.length > 300 ? `${r.raw.slice(0, 300)}... (${r.rawBytes} bytes)` : r.raw;
        io.stdout.write(
          `${new Date(r.firstSeenAt).toISOString()}  ${r.log} ${terminalSafe(r.objectId || '-')} ` +
            ` entry ${terminalSafe(r.entryId ?? '(no id)')}  request ${terminalSafe(r.requestId ?? '-')}\n` +
            `    reason: ${terminalSafe(r.reason)}\n    raw: ${terminalSafe(scrubSecrets(raw))}\n`,
        );
      }
    }
    return 0;
  });
}
