import { Command, CommanderError } from 'commander';
import { ENV_MAPPING } from '../config/appConfigSchema.js';
import { ChangefeedError, ConfigError, describeError } from '../errors.js';
import { scrubSecrets } from '../secrets/secretRegistry.js';
import { CHANGEFEED_VERSION } from '../version.js';
import { writeLine, type CliIo } from './cliIo.js';
import type { CommandHost, DefineCommand } from './commandLine.js';
import { defineCheckCommand } from './checkCommand.js';
import { defineDeadLettersCommand } from './deadLettersCommand.js';
import { defineDemoCommand } from './demoCommand.js';
import { definePlanCommand } from './planCommand.js';
import { defineQuarantineCommand } from './quarantineCommand.js';
import { defineReceiveCommand } from './receiveCommand.js';
import { defineReplayCommand } from './replayCommand.js';
import { defineRunCommand } from './runCommand.js';
import { defineSchemaCommand } from './schemaCommand.js';
import { defineSimulateCommand } from './simulateCommand.js';
import { defineSinksCommand } from './sinksCommand.js';
import { defineStatusCommand } from './statusCommand.js';
import { defineStoreCommand } from './storeCommand.js';
import { defineTenantsCommand } from './tenantsCommand.js';
import { defineWatchCommand } from './watchCommand.js';

/** Every command, in the order `changefeed --help` lists them. */
const COMMANDS: readonly DefineCommand[] = [
  defineRunCommand,
  defineDemoCommand,
  defineSimulateCommand,
  defineCheckCommand,
  defineStatusCommand,
  defineDeadLettersCommand,
  defineSinksCommand,
  defineReplayCommand,
  definePlanCommand,
  defineReceiveCommand,
  defineWatchCommand,
  defineQuarantineCommand,
  defineTenantsCommand,
  defineStoreCommand,
  defineSchemaCommand,
];

/** The exit codes, as `--help` and README.md's command section state them. */
const EXIT_CODES = { ok: 0, failure: 1, usage: 2 } as const;

const HELP_FOOTER = `
Exit codes:
  0  done (for run, demo, simulate and receive: stopped by SIGINT/SIGTERM after draining)
  1  a failure at run time (a check failed, a sink refused, a second signal, ...)
  2  bad usage or configuration (unknown command or flag, bad value, invalid config, port in use)

Environment: ${['CHANGEFEED_CONFIG', ...Object.keys(ENV_MAPPING)].join(', ')}`;

/**
 * The command line as a commander program writing through `io`; README.md's command table lists
 * each of its commands (test/unit/docsMatchCode.test.ts). `onExit` receives each command's exit code.
 */
export function buildProgram(io: CliIo, onExit: (code: number) => void = () => undefined): Command {
  const program = new Command('changefeed')
    .description('Polls the activity logs of the skills-management API and delivers the changes to sinks.')
    .version(CHANGEFEED_VERSION, '-V, --version', 'print the version')
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    })
    .exitOverride()
    .showSuggestionAfterError(true)
    .showHelpAfterError('(add --help for usage)')
    .helpCommand('help [command]', 'show the help of a command')
    .addHelpText('after', HELP_FOOTER);
  const host: CommandHost = {
    io,
    run:
      (body) =>
      async (...args) => {
        onExit(await runBody(io, commandPath(args[args.length - 1]), () => body(...args)));
      },
  };
  program
    .command('version')
    .summary('print the version')
    .description('Prints the version of changefeed, as --version does.')
    .action(() => {
      io.stdout.write(`${CHANGEFEED_VERSION}\n`);
    });
  for (const define of COMMANDS) define(program, host);
  for (const command of allCommands(program))
    command.addHelpText('after', '\nExit codes: 0 ok, 1 failure at run time, 2 bad usage or configuration.');
  return program;
}

/** Runs `changefeed` with `argv` (the arguments after the program name) and returns its exit code. */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  let code: number = EXIT_CODES.ok;
  const program = buildProgram(io, (exit) => (code = exit));
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return code;
  } catch (error) {
    // Commander has written its message (with a "did you mean" where one fits) or the help.
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT_CODES.ok : EXIT_CODES.usage;
    throw error;
  }
}

/** A command's body, its error turned into a message and an exit code. */
async function runBody(io: CliIo, name: string, body: () => Promise<number> | number): Promise<number> {
  const say = (text: string): void => writeLine(io.stderr, text);
  try {
    return await body();
  } catch (error) {
    if (error instanceof ConfigError) {
      say(`changefeed: invalid configuration\n${scrubSecrets(error.message)}`);
      return EXIT_CODES.usage;
    }
    if (error instanceof ChangefeedError && error.code === 'PORT_IN_USE') {
      say(`changefeed ${name}: ${error.message}`);
      return EXIT_CODES.usage;
    }
    if (error instanceof ChangefeedError && error.code === 'USAGE') {
      say(`changefeed ${name}: ${error.message}\n(changefeed ${name} --help for usage)`);
      return EXIT_CODES.usage;
    }
    const message = error instanceof ChangefeedError ? describeError(error) : ((error as Error).stack ?? String(error));
    say(`changefeed ${name}: ${scrubSecrets(message)}`);
    return EXIT_CODES.failure;
  }
}

function allCommands(parent: Command): Command[] {
  return parent.commands.flatMap((command) => [command, ...allCommands(command)]);
}

/** "dead-letters retry" for the command commander passes an action last. */
function commandPath(command: unknown): string {
  const names: string[] = [];
  for (let c = command as Command | null; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}
