import { parseArgs } from 'node:util';
import { ZodError } from 'zod';
import { ChangefeedError } from '../errors.js';
import { createLogger } from '../observe/createLogger.js';
import { startSimulator } from '../simulator/index.js';
import { onShutdownSignals } from './shutdownSignals.js';

export const SIMULATE_USAGE = `changefeed simulate [--port N] [--seed N] [--careers N] [--skills N] [--events-per-hour N]
                    [--sort-order newest-first|oldest-first] [--reads-per-hour N] [--error-rate P]
  Runs the built-in simulator of the service on 127.0.0.1 until stopped, and prints its base URL
  and API key, so consumers can be developed without access to the real service.`;

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
    },
    strict: true,
  });
  const num = (flag: string, v: string | undefined): number | undefined => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isFinite(n)) throw new ChangefeedError('USAGE', `--${flag} must be a number, got "${v}"`);
    return n;
  };
  const simulator = await startSimulator({
    port: num('port', values.port),
    seed: num('seed', values.seed),
    careers: num('careers', values.careers),
    skills: num('skills', values.skills),
    eventsPerHour: num('events-per-hour', values['events-per-hour']),
    sortOrder: values['sort-order'] as 'newest-first' | 'oldest-first' | undefined,
    readsPerHour: num('reads-per-hour', values['reads-per-hour']),
    faults: values['error-rate'] === undefined ? undefined : { errorRate: num('error-rate', values['error-rate']) },
  }).catch((error: unknown) => {
    if (error instanceof ZodError) {
      throw new ChangefeedError('USAGE', error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
    }
    throw error;
  });
  process.stdout.write(`simulator listening at ${simulator.url}\nCHANGEFEED_BASE_URL=${simulator.url}\nCHANGEFEED_API_KEY=${simulator.apiKey}\n`);
  onShutdownSignals(() => simulator.close(), createLogger({}), 5_000);
  return new Promise<number>(() => undefined);
}
