import { ENV_MAPPING } from '../config/appConfigSchema.js';
import { ChangefeedError, ConfigError, describeError } from '../errors.js';
import { scrubSecrets } from '../secrets/secretRegistry.js';
import { CHECK_USAGE, checkCommand } from './checkCommand.js';
import { DEAD_LETTERS_USAGE, deadLettersCommand } from './deadLettersCommand.js';
import { DEMO_USAGE, demoCommand } from './demoCommand.js';
import { RECEIVE_USAGE, receiveCommand } from './receiveCommand.js';
import { PLAN_USAGE, planCommand } from './planCommand.js';
import { REPLAY_USAGE, replayCommand } from './replayCommand.js';
import { RUN_USAGE, runCommand } from './runCommand.js';
import { SCHEMA_USAGE, schemaCommand } from './schemaCommand.js';
import { SIMULATE_USAGE, simulateCommand } from './simulateCommand.js';
import { QUARANTINE_USAGE, quarantineCommand } from './quarantineCommand.js';
import { STATUS_USAGE, statusCommand } from './statusCommand.js';
import { STORE_USAGE, storeCommand } from './storeCommand.js';
import { TENANTS_USAGE, tenantsCommand } from './tenantsCommand.js';
import { WATCH_USAGE, watchCommand } from './watchCommand.js';

/** Every command, by name; README.md's command table lists each (test/unit/docsMatchCode.test.ts). */
export const COMMANDS: Record<string, { usage: string; run: (argv: string[]) => Promise<number> | number }> = {
  run: { usage: RUN_USAGE, run: runCommand },
  demo: { usage: DEMO_USAGE, run: demoCommand },
  simulate: { usage: SIMULATE_USAGE, run: simulateCommand },
  check: { usage: CHECK_USAGE, run: checkCommand },
  status: { usage: STATUS_USAGE, run: statusCommand },
  'dead-letters': { usage: DEAD_LETTERS_USAGE, run: deadLettersCommand },
  replay: { usage: REPLAY_USAGE, run: replayCommand },
  plan: { usage: PLAN_USAGE, run: planCommand },
  receive: { usage: RECEIVE_USAGE, run: receiveCommand },
  watch: { usage: WATCH_USAGE, run: watchCommand },
  quarantine: { usage: QUARANTINE_USAGE, run: quarantineCommand },
  tenants: { usage: TENANTS_USAGE, run: tenantsCommand },
  store: { usage: STORE_USAGE, run: storeCommand },
  schema: { usage: SCHEMA_USAGE, run: schemaCommand },
};

const USAGE = `usage: changefeed <command> [options]

${Object.values(COMMANDS)
  .map((c) => c.usage)
  .join('\n\n')}

Environment: ${['CHANGEFEED_CONFIG', ...Object.keys(ENV_MAPPING)].join(', ')}`;

/** Exit codes: 0 ok, 1 failure at run time, 2 bad usage or configuration. */
export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return name === undefined ? 2 : 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`changefeed: unknown command "${name}"\n\n${USAGE}\n`);
    return 2;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(`${command.usage}\n`);
    return 0;
  }
  try {
    return await command.run(rest);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`changefeed: invalid configuration\n${scrubSecrets(error.message)}\n`);
      return 2;
    }
    const usageError = error instanceof ChangefeedError && error.code === 'USAGE';
    if (error instanceof ChangefeedError && error.code === 'PORT_IN_USE') {
      process.stderr.write(`changefeed ${name}: ${error.message}\n`);
      return 2;
    }
    if (usageError || (error instanceof TypeError && (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS'))) {
      process.stderr.write(`changefeed ${name}: ${error.message}\n\n${command.usage}\n`);
      return 2;
    }
    const message = error instanceof ChangefeedError ? describeError(error) : ((error as Error).stack ?? String(error));
    process.stderr.write(`changefeed ${name}: ${scrubSecrets(message)}\n`);
    return 1;
  }
}
