import { parseArgs } from 'node:util';
import { ZodError } from 'zod';
import { ChangefeedError } from '../errors.js';
import { createLogger } from '../observe/createLogger.js';
import { MAX_COMPANIES, startSimulator, type Simulator } from '../simulator/index.js';
import { numericFlag, PORT_FLAG, requiredNumericFlag, SEED_FLAG, type NumericFlagRule } from './numericFlag.js';
import { bindPort } from './portInUse.js';
import { onShutdownSignals } from './shutdownSignals.js';

const COUNT_FLAG: NumericFlagRule = { min: 0, max: 100_000, integer: true };
/** Events per hour across all logs; beyond a million an hour the simulator is no longer a stand-in. */
export const RATE_FLAG: NumericFlagRule = { min: 0, max: 1_000_000 };
const COMPANIES_FLAG: NumericFlagRule = { min: 1, max: MAX_COMPANIES, integer: true };

export const SIMULATE_USAGE = `changefeed simulate [--port N] [--seed N] [--careers N] [--skills N] [--events-per-hour N]
                    [--sort-order newest-first|oldest-first] [--reads-per-hour N] [--error-rate P]
                    [--companies N]
  Runs the built-in simulator of the service on 127.0.0.1 until stopped, and prints its base URL
  and API key, so consumers can be developed without access to the real service. With
  --companies N (1 to ${MAX_COMPANIES.toLocaleString('en-US')}) it serves N companies, each with its own logs, key and reads
  bucket, and prints one key per company; counts and rates are per company.`;

export async function simulateCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string', default: '8080' },
      seed: { type: 'string', default: '1' },
      careers: { type: 'string' },
      skills: { type: 'string' },
      'events-per-hour': { type: 'string' },
      'sort-order': { type: 'string' },
      'reads-per-hour': { type: 'string' },
      'error-rate': { type: 'string' },
      companies: { type: 'string' },
    },
    strict: true,
  });
  const sortOrder = values['sort-order'];
  if (sortOrder !== undefined && sortOrder !== 'newest-first' && sortOrder !== 'oldest-first') {
    throw new ChangefeedError('USAGE', `--sort-order must be newest-first or oldest-first, got "${sortOrder}"`);
  }
  const port = requiredNumericFlag('port', values.port, PORT_FLAG);
  const companies = numericFlag('companies', values.companies, COMPANIES_FLAG);
  const simulator = await bindPort({ port, host: '127.0.0.1', setting: '--port' }, () =>
    startSimulator({
      port,
      seed: numericFlag('seed', values.seed, SEED_FLAG),
      careers: numericFlag('careers', values.careers, COUNT_FLAG),
      skills: numericFlag('skills', values.skills, COUNT_FLAG),
      eventsPerHour: numericFlag('events-per-hour', values['events-per-hour'], RATE_FLAG),
      sortOrder,
      readsPerHour: numericFlag('reads-per-hour', values['reads-per-hour'], { min: 0, max: 10_000_000, integer: true }),
      companies,
      // Nothing can read the request record of this process; it would only grow.
      recordRequests: false,
      faults:
        values['error-rate'] === undefined
          ? undefined
          : { errorRate: numericFlag('error-rate', values['error-rate'], { min: 0, max: 1 }) },
    }).catch((error: unknown) => {
      if (error instanceof ZodError) {
        throw new ChangefeedError('USAGE', error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
      }
      throw error;
    }),
  );
  process.stdout.write(startBanner(simulator, companies !== undefined));
  onShutdownSignals(() => simulator.close(), createLogger({}), 5_000);
  return new Promise<number>(() => undefined);
}

/**
 * The base URL and the key the daemon needs; with --companies, one `company <i> CHANGEFEED_API_KEY=`
 * line per company (a tenant's key: `grep '^company 7 ' | cut -d= -f2`).
 */
export function startBanner(simulator: Simulator, perCompany: boolean): string {
  const lines = [`simulator listening at ${simulator.url}`, `CHANGEFEED_BASE_URL=${simulator.url}`];
  if (!perCompany) lines.push(`CHANGEFEED_API_KEY=${simulator.apiKey}`);
  else
    for (const company of simulator.companies)
      lines.push(`company ${company.index} CHANGEFEED_API_KEY=${company.apiKey}`);
  return `${lines.join('\n')}\n`;
}
