import { systemClock, type Clock } from '../clock.js';
import type { LogKind } from '../logs.js';
import { ActivitySimulation, type AppendedEntry } from './activitySimulation.js';
import type { Entry } from './activityStore.js';
import { SimulatedService, type RequestRecord } from './simulatedService.js';
import { SimulatorServer } from './simulatorServer.js';
import { simulatorOptionsSchema, type FaultOptions, type SimulatorOptionsInput } from './simulatorOptions.js';

export type { Entry } from './activityStore.js';
export { streamKey } from './activityStore.js';
export type { AppendedEntry } from './activitySimulation.js';
export { CHUNK_MS } from './activitySimulation.js';
export { deriveApiKey } from './apiKeys.js';
export { CAREER_EVENTS, EVENT_CATALOGS, IDENTITY_PROVIDER_EVENTS, SKILL_EVENTS, isKnownEvent } from './eventCatalog.js';
export { ERRORS_BASE_URL, UPGRADE_URL, type FieldError, type Problem } from './problemResponses.js';
export type { RequestRecord } from './simulatedService.js';
export {
  ALL_SCOPES,
  faultOptionsSchema,
  simulatorOptionsSchema,
  workloadSchema,
  type FaultOptions,
  type Workload,
  type SimulatorOptions,
  type SimulatorOptionsInput,
} from './simulatorOptions.js';

/**
 * A running stand-in for the service: a loopback HTTP server plus handles to steer it.
 *
 * Activity is generated from the seed and the clock alone, lazily: every request (and catchUp)
 * brings the simulation up to clock.now(). Mutations (append, delete, faults, keys) apply to the
 * very next request.
 */
export interface Simulator {
  /** Base URL such as http://127.0.0.1:PORT; API paths start with /api/v1. */
  readonly url: string;
  /** A key accepted by the simulator: the first of options.apiKeys, else a full-scope key derived from the seed. */
  readonly apiKey: string;
  readonly clock: Clock;
  /** Careers and skills that exist now (deleted ones drop out, added ones appear). */
  readonly careerIds: readonly string[];
  readonly skillIds: readonly string[];
  /** Generates activity up to clock.now() (also done lazily on every request). */
  catchUp(): void;
  /** Every entry visible now (arrival time <= now), in arrival order, for tests to compare with what the daemon delivered. */
  visibleEntries(): Array<{ log: LogKind; objectId: string | null; entry: Record<string, unknown> }>;
  /**
   * Appends entries directly; unspecified fields are filled like a generated entry. An entry
   * without performedAt happened now. Each arrives at opts.arrivesAt, by default at max(now, performedAt).
   */
  appendEntries(
    log: LogKind,
    objectId: string | null,
    entries: AppendedEntry[],
    opts?: { arrivesAt?: number },
  ): Entry[];
  /** `count` generated entries with performedAt uniform in [range.from, range.to) (epoch ms); past ones arrive now. */
  appendBurst(log: LogKind, objectId: string | null, count: number, range: { from: number; to: number }): Entry[];
  /** Changes faults at run time; unspecified fields keep their value. */
  setFaults(faults: Partial<FaultOptions>): void;
  /** Subsequent reads of the object give 404 not-found; it records nothing more. */
  deleteObject(log: 'career' | 'skill', id: string): void;
  /** Adds an object (id generated when omitted) that appears in discovery and receives activity at its log's mean rate. */
  addObject(log: 'career' | 'skill', id?: string): string;
  addApiKey(key: string, scopes: string[]): void;
  revokeApiKey(key: string): void;
  /** Shrinks (or grows) the hourly allowance of every key; reads already spent stay spent. */
  setReadsPerHour(n: number): void;
  /** Spends `n` reads of `key`'s bucket, as another client of the same key would. */
  spendReads(key: string, n: number): void;
  /** Long-run events per hour of every live stream, keyed by streamKey(log, objectId) = `${log}:${objectId}`. */
  trueRates(): Map<string, number>;
  /** Every request received, oldest first. */
  readonly requests: ReadonlyArray<RequestRecord>;
  close(): Promise<void>;
}

export async function startSimulator(options: SimulatorOptionsInput = {}): Promise<Simulator> {
  const { clock = systemClock, ...data } = options;
  const parsed = { ...simulatorOptionsSchema.parse(data), clock };
  const simulation = new ActivitySimulation(parsed, clock.now());
  const service = new SimulatedService(parsed, simulation, clock);
  simulation.catchUp(clock.now());
  const server = await SimulatorServer.listen(service, clock, parsed.host, parsed.port);
  return {
    url: server.url,
    apiKey: service.primaryKey,
    clock,
    get careerIds() {
      return simulation.directory.ids('career');
    },
    get skillIds() {
      return simulation.directory.ids('skill');
    },
    catchUp: () => simulation.catchUp(clock.now()),
    visibleEntries: () =>
      simulation
        .visibleEntries(clock.now())
        .map(({ log, objectId, entry }) => ({ log, objectId, entry: { ...entry } })),
    appendEntries: (log, objectId, entries, opts) =>
      simulation.appendEntries(log, objectId, entries, clock.now(), opts?.arrivesAt).map((e) => ({ ...e })),
    appendBurst: (log, objectId, count, range) =>
      simulation.appendBurst(log, objectId, count, range, clock.now()).map((e) => ({ ...e })),
    setFaults: (faults) => service.setFaults(faults),
    deleteObject: (log, id) => simulation.deleteObject(log, id, clock.now()),
    addObject: (log, id) => simulation.addObject(log, id, clock.now()),
    addApiKey: (key, scopes) => service.keys.add(key, scopes),
    revokeApiKey: (key) => service.keys.revoke(key),
    setReadsPerHour: (n) => service.buckets.setLimit(n),
    spendReads: (key, n) => void service.buckets.spend(key, n, clock.now()),
    trueRates: () => simulation.workload.trueRates(),
    requests: service.requests,
    close: () => server.close(),
  };
}
