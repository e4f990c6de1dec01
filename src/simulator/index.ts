import { systemClock, type Clock } from '../clock.js';
import { ActivitySimulation, companySeed } from './activitySimulation.js';
import { companyHandle, type SimulatedCompany } from './simulatedCompany.js';
import { SimulatedService, type RequestRecord } from './simulatedService.js';
import { listenSimulator } from './simulatorServer.js';
import { simulatorOptionsSchema, type SimulatorOptionsInput } from './simulatorOptions.js';

export { streamKey } from './activityStore.js';
export { EVENT_CATALOGS } from './eventCatalog.js';
export type { RequestRecord } from './simulatedService.js';
export { instanceIdFrom } from './daemonUserAgent.js';
export type { SimulatedCompany } from './simulatedCompany.js';
export { ALL_SCOPES, MAX_COMPANIES, simulatorOptionsSchema, type SimulatorOptionsInput } from './simulatorOptions.js';

/**
 * A running stand-in for the service: a loopback HTTP server plus handles to steer it. It serves
 * `options.companies` companies (one by default), each with its own data, key and reads bucket;
 * the members inherited from SimulatedCompany act on the first one, `companies[0]`.
 *
 * Activity is generated from the seed and the clock alone, lazily: every request (and catchUp)
 * brings the requested company up to clock.now(). Mutations (append, delete, faults, keys) apply
 * to the very next request.
 */
export interface Simulator extends SimulatedCompany {
  /** Base URL such as http://127.0.0.1:PORT; API paths start with /api/v1. */
  readonly url: string;
  readonly clock: Clock;
  /** Every company, by index; the simulator itself is the handle of the first. */
  readonly companies: readonly SimulatedCompany[];
  /** The key stops working at once, whichever company it belongs to. */
  revokeApiKey(key: string): void;
  /** Spends `n` reads of `key`'s bucket, as another client of the same key would. */
  spendReads(key: string, n: number): void;
  /** Every request received, oldest first (empty when options.recordRequests is false). */
  readonly requests: ReadonlyArray<RequestRecord>;
  close(): Promise<void>;
}

export async function startSimulator(options: SimulatorOptionsInput = {}): Promise<Simulator> {
  const { clock = systemClock, ...data } = options;
  const parsed = { ...simulatorOptionsSchema.parse(data), clock };
  const startedAt = clock.now();
  const simulations = Array.from(
    { length: parsed.companies },
    (_, company) => new ActivitySimulation(parsed, startedAt, companySeed(parsed.seed, company)),
  );
  const service = new SimulatedService(parsed, simulations, clock);
  // The others catch up on their first request: a thousand companies' history is not built up front.
  simulations[0]?.catchUp(startedAt);
  const server = await listenSimulator(service, clock, parsed.host, parsed.port);
  const companies = simulations.map((simulation, index) =>
    companyHandle(index, service.companyKeys[index] ?? '', simulation, service.keys, clock),
  );
  const first = companies[0] as SimulatedCompany;
  return {
    ...first,
    get careerIds() {
      return first.careerIds;
    },
    get skillIds() {
      return first.skillIds;
    },
    url: server.url,
    clock,
    companies,
    revokeApiKey: (key) => service.keys.revoke(key),
    spendReads: (key, n) => service.buckets.spend(key, n, clock.now()),
    requests: service.requests,
    close: () => server.close(),
  };
}
