import { scrubSecrets } from '../secrets/secretRegistry.js';
import { terminalSafe } from './terminalText.js';
import { withExistingStore } from './existingStore.js';
import type { Command } from 'commander';
import type { CliIo } from './cliIo.js';
import { configOption, jsonOption, tenantOption, type CommandHost, type TenantFlags } from './commandLine.js';
import { ChangefeedError } from '../errors.js';
import { loadTenantConfig } from './loadAppConfig.js';

export function defineDeadLettersCommand(program: Command, host: CommandHost): void {
  const deadLetters = program
    .command('dead-letters')
    .summary('list dead letters, or put them back in line')
    .description(
      `Shows events that exhausted their retries or were rejected for good, with the last status, response and error; retry puts them back in line with a fresh attempt budget. Safe while the daemon runs; it picks re-queued events up within seconds.`,
    );
  deadLetters
    .command('list')
    .description('Shows the dead letters with their last status, response and error.')
    .addOption(configOption())
    .addOption(tenantOption())
    .option('--sink <name>', 'only those of this sink')
    .option('--id <event-id>', 'only this event')
    .addOption(jsonOption())
    .action(host.run((options: DeadLettersOptions) => deadLettersCommand('list', options, host.io)));
  deadLetters
    .command('retry')
    .description('Puts dead letters back in line with a fresh attempt budget; exit 1 when none was re-queued.')
    .addOption(configOption())
    .addOption(tenantOption())
    .option('--sink <name>', 'only those of this sink')
    .option('--id <event-id>', 'this event')
    .option('--all', 'every dead letter (of --sink, if given)', false)
    .action(host.run((options: DeadLettersOptions) => deadLettersCommand('retry', options, host.io)));
}

interface DeadLettersOptions extends TenantFlags {
  sink?: string;
  id?: string;
  all?: boolean;
  json?: boolean;
}

async function deadLettersCommand(action: 'list' | 'retry', values: DeadLettersOptions, io: CliIo): Promise<number> {
  const { config, tenant } = loadTenantConfig(values, io.env, 'inspection');
  if (values.sink !== undefined && !config.sinks.some((s) => s.name === values.sink)) {
    throw new ChangefeedError(
      'USAGE',
      `no sink named "${values.sink}" in the config (sinks: ${config.sinks.map((s) => s.name).join(', ')})`,
    );
  }
  return withExistingStore(config, { tenant }, async (store) => {
    if (action === 'list') {
      const letters = await store.deadLetters.list({ sink: values.sink, eventId: values.id });
      if (values.json) io.stdout.write(`${scrubSecrets(JSON.stringify(letters, null, 2))}\n`);
      else if (letters.length === 0) io.stdout.write('no dead letters\n');
      else {
        for (const d of letters) {
          io.stdout.write(
            `${d.sink}  ${d.eventId}  ${d.type}  attempts=${d.attempts}  status=${d.lastStatus ?? '-'} ` +
              ` died=${d.deadAt === null ? '-' : new Date(d.deadAt).toISOString()}\n` +
              `    error: ${printable(d.lastError ?? '-')}\n` +
              (d.lastResponse ? `    response: ${printable(d.lastResponse.replace(/\s+/g, ' ').slice(0, 200))}\n` : ''),
          );
        }
      }
      return 0;
    }
    if (!values.all && values.id === undefined)
      throw new ChangefeedError('USAGE', 'retry needs --id EVENT_ID or --all');
    const now = Date.now();
    let requeued = 0;
    if (values.id !== undefined) requeued = await store.deadLetters.requeueEvent(values.id, values.sink, now);
    else
      for (const sink of values.sink ? [values.sink] : config.sinks.map((s) => s.name))
        requeued += await store.deadLetters.requeueSink(sink, now);
    io.stdout.write(`re-queued ${requeued} dead letter${requeued === 1 ? '' : 's'}\n`);
    return requeued > 0 || values.all ? 0 : 1;
  });
}

/** A destination's words for a terminal: its escapes made visible, secrets this process knows cut. */
const printable = (text: string): string => terminalSafe(scrubSecrets(text));
