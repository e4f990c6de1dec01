import type { Clock } from '../clock.js';
import type { LogKind } from '../logs.js';
import type { ActivitySimulation, AppendedEntry } from './activitySimulation.js';
import type { Entry } from './activityStore.js';
import type { ApiKeyRegistry } from './apiKeys.js';

/**
 * One company of the simulated service: its key, its careers and skills, its activity. What a
 * test steers per tenant; a Simulator is also the handle of its first company.
 */
export interface SimulatedCompany {
  /** Position among the simulator's companies (0 is the first); RequestRecord.company names it. */
  readonly index: number;
  /** The company's full-scope key, derived from the seed and the index. */
  readonly apiKey: string;
  /** Careers and skills that exist now (deleted ones drop out, added ones appear). */
  readonly careerIds: readonly string[];
  readonly skillIds: readonly string[];
  /** Generates activity up to clock.now() (also done lazily on every request of this company). */
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
  /** Subsequent reads of the object give 404 not-found; it records nothing more. */
  deleteObject(log: 'career' | 'skill', id: string): void;
  /** Adds an object (id generated when omitted) that appears in discovery and receives activity at its log's mean rate. */
  addObject(log: 'career' | 'skill', id?: string): string;
  /** Adds a key of this company (with its own reads bucket), or changes the scopes of one of its keys. */
  addApiKey(key: string, scopes: string[]): void;
  /** Long-run events per hour of every live stream, keyed by streamKey(log, objectId) = `${log}:${objectId}`. */
  trueRates(): Map<string, number>;
}

export function companyHandle(
  index: number,
  apiKey: string,
  simulation: ActivitySimulation,
  keys: ApiKeyRegistry,
  clock: Clock,
): SimulatedCompany {
  return {
    index,
    apiKey,
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
    deleteObject: (log, id) => simulation.deleteObject(log, id, clock.now()),
    addObject: (log, id) => simulation.addObject(log, id, clock.now()),
    addApiKey: (key, scopes) => keys.add(key, scopes, index),
    trueRates: () => simulation.workload.trueRates(),
  };
}
