import { Option, type Command } from 'commander';
import { ZodError } from 'zod';
import { ChangefeedError } from '../errors.js';
import { createLogger } from '../observe/createLogger.js';
import { MAX_COMPANIES, startSimulator, type Simulator } from '../simulator/index.js';
import { logDestination, type CliIo } from './cliIo.js';
import type { CommandHost } from './commandLine.js';
import { numberIn, PORT, SEED, type NumberRule } from './optionParsers.js';
import { bindPort } from './portInUse.js';
import { untilStopped } from './shutdownSignals.js';

const COUNT: NumberRule = { min: 0, max: 100_000, integer: true };
/** Events per hour across all logs; beyond a million an hour the simulator is no longer a stand-in. */
export const RATE: NumberRule = { min: 0, max: 1_000_000 };
const COMPANIES: NumberRule = { min: 1, max: MAX_COMPANIES, integer: true };

export function defineSimulateCommand(program: Command, host: CommandHost): void {
  program
    .command('simulate')
    .summary('run the built-in simulator of the service until stopped')
    .description(
      `Runs the built-in simulator of the service on 127.0.0.1 until stopped, and prints its base URL and API key, so consumers can be developed without access to the real service. With --companies N (1 to ${MAX_COMPANIES.toLocaleString('en-US')}) it serves N companies, each with its own logs, key and reads bucket, and prints one key per company; counts and rates are per company.`,
    )
    .option('--port <n>', 'the port on 127.0.0.1 (0: any free one)', numberIn(PORT), 8080)
    .option('--seed <n>', 'the seed of the simulated data', numberIn(SEED), 1)
    .option('--careers <n>', 'careers per company', numberIn(COUNT))
    .option('--skills <n>', 'skills per company', numberIn(COUNT))
    .option('--events-per-hour <n>', 'changes per hour across all logs', numberIn(RATE))
    .addOption(
      new Option('--sort-order <order>', 'the order of activity pages').choices(['newest-first', 'oldest-first']),
    )
    .option(
      '--reads-per-hour <n>',
      'the reads bucket of each key',
      numberIn({ min: 0, max: 10_000_000, integer: true }),
    )
    .option('--error-rate <p>', 'the share of requests answered with an error (0 to 1)', numberIn({ min: 0, max: 1 }))
    .option('--companies <n>', 'serve this many companies, each with its own key', numberIn(COMPANIES))
    .action(host.run((options: SimulateOptions) => simulateCommand(options, host.io)));
}

interface SimulateOptions {
  port: number;
  seed: number;
  careers?: number;
  skills?: number;
  eventsPerHour?: number;
  sortOrder?: 'newest-first' | 'oldest-first';
  readsPerHour?: number;
  errorRate?: number;
  companies?: number;
}

async function simulateCommand(values: SimulateOptions, io: CliIo): Promise<number> {
  const { errorRate, ...simulated } = values;
  // Before the port is bound, so a bad CHANGEFEED_LOG_LEVEL leaves nothing open.
  const logger = createLogger({ env: io.env, destination: logDestination(io) });
  const simulator = await bindPort({ port: values.port, host: '127.0.0.1', setting: '--port' }, () =>
    startSimulator({
      ...simulated,
      // Nothing can read the request record of this process; it would only grow.
      recordRequests: false,
      faults: errorRate === undefined ? undefined : { errorRate },
    }).catch((error: unknown) => {
      if (error instanceof ZodError) {
        throw new ChangefeedError('USAGE', error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
      }
      throw error;
    }),
  );
  io.stdout.write(startBanner(simulator, values.companies !== undefined));
  return untilStopped(io.signal, () => simulator.close(), logger, 5_000);
}

/**
 * The base URL and the key the daemon needs; with --companies, one `company <i> CHANGEFEED_API_KEY=`
 * line per company (a tenant's key: `grep '^company 7 ' | cut -d= -f2`).
 */
function startBanner(simulator: Simulator, perCompany: boolean): string {
  const lines = [`simulator listening at ${simulator.url}`, `CHANGEFEED_BASE_URL=${simulator.url}`];
  if (!perCompany) lines.push(`CHANGEFEED_API_KEY=${simulator.apiKey}`);
  else
    for (const company of simulator.companies)
      lines.push(`company ${company.index} CHANGEFEED_API_KEY=${company.apiKey}`);
  return `${lines.join('\n')}\n`;
}
