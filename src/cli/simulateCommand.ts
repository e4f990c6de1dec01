import { parseArgs } from 'node:util';
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
  const num = (v: string | undefined): number | undefined => (v === undefined ? undefined : Number(v));
  const simulator = await startSimulator({
    port: Number(values.port),
    seed: Number(values.seed),
    careers: num(values.careers),
    skills: num(values.skills),
    eventsPerHour: num(values['events-per-hour']),
    sortOrder: values['sort-order'] as 'newest-first' | 'oldest-first' | undefined,
    readsPerHour: num(values['reads-per-hour']),
    faults: values['error-rate'] === undefined ? undefined : { errorRate: Number(values['error-rate']) },
  });
  process.stdout.write(`simulator listening at ${simulator.url}\nCHANGEFEED_BASE_URL=${simulator.url}\nCHANGEFEED_API_KEY=${simulator.apiKey}\n`);
  onShutdownSignals(() => simulator.close(), createLogger({}), 5_000);
  return new Promise<number>(() => undefined);
}
