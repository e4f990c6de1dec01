import type { LogKind } from '../logs.js';
import { streamKey } from './activityStore.js';
import type { Random } from './random.js';
import type { Workload } from './simulatorOptions.js';

export interface Arrival {
  readonly objectId: string | null;
  /** Epoch ms at which the change happens. */
  readonly at: number;
}

export interface WorkloadSettings {
  workload: Workload;
  eventsPerHour: number;
  identityProviderShare: number;
  skillShare: number;
}

interface RateTable {
  objectIds: Array<string | null>;
  cumulative: number[];
  /** Events per hour over the whole log. */
  total: number;
}

const HOUR_MS = 3_600_000;

/**
 * The arrival process of every log. Each object has an exact rate (events per hour) fixed at
 * start, so a scheduling benchmark can compare what a poller learned with the truth.
 *
 * Uniform and Zipf workloads are Poisson processes per object, generated as one merged process
 * per log whose events are assigned to objects in proportion to their rates (the same law, far
 * fewer draws). The bursty workload starts edit sessions at a Poisson rate and puts a uniform
 * number of events on one object within a few minutes; the session rate is scaled by the mean
 * session size so the long-run per-object rates are the same as in Zipf mode.
 */
export class WorkloadModel {
  private readonly rates: Record<LogKind, Map<string | null, number>> = {
    career: new Map(),
    skill: new Map(),
    identity_provider: new Map(),
  };
  private readonly tables: Partial<Record<LogKind, RateTable>> = {};
  /** The rate given to an object added at run time: the mean of its log at start. */
  private readonly meanRate: Record<LogKind, number>;

  constructor(
    private readonly settings: WorkloadSettings,
    objects: { career: readonly string[]; skill: readonly string[] },
    random: (label: string) => Random,
  ) {
    const { eventsPerHour, identityProviderShare, skillShare } = settings;
    const logRate: Record<LogKind, number> = {
      career: eventsPerHour * (1 - identityProviderShare - skillShare),
      skill: eventsPerHour * skillShare,
      identity_provider: eventsPerHour * identityProviderShare,
    };
    this.rates.identity_provider.set(null, logRate.identity_provider);
    this.meanRate = {
      career: logRate.career / Math.max(1, objects.career.length),
      skill: logRate.skill / Math.max(1, objects.skill.length),
      identity_provider: logRate.identity_provider,
    };
    const s = settings.workload.kind === 'uniform' ? 0 : settings.workload.s;
    for (const log of ['career', 'skill'] as const) {
      // Ranks are a seeded shuffle so the hottest object is not always the first one listed.
      const ranked = random(`ranks:${log}`).shuffle(objects[log]);
      const weights = ranked.map((_, i) => 1 / Math.pow(i + 1, s));
      const sum = weights.reduce((a, b) => a + b, 0);
      ranked.forEach((id, i) => this.rates[log].set(id, (logRate[log] * (weights[i] ?? 0)) / sum));
    }
  }

  /** Long-run events per hour of every live stream, keyed by `${log}:${objectId}`. */
  trueRates(): Map<string, number> {
    const out = new Map<string, number>();
    for (const log of ['career', 'skill', 'identity_provider'] as const) {
      for (const [objectId, rate] of this.rates[log]) out.set(streamKey(log, objectId), rate);
    }
    return out;
  }

  addObject(log: 'career' | 'skill', objectId: string): void {
    this.rates[log].set(objectId, this.meanRate[log]);
    delete this.tables[log];
  }

  removeObject(log: 'career' | 'skill', objectId: string): void {
    this.rates[log].delete(objectId);
    delete this.tables[log];
  }

  /** Changes of `log` that happen in [from, to), unordered. */
  arrivals(log: LogKind, from: number, to: number, random: Random): Arrival[] {
    const table = this.table(log);
    if (table.total <= 0 || to <= from) return [];
    const out: Arrival[] = [];
    const workload = this.settings.workload;
    if (workload.kind !== 'bursty') {
      const perMs = table.total / HOUR_MS;
      for (let t = from + random.exponential(perMs); t < to; t += random.exponential(perMs)) {
        out.push({ objectId: pick(table, random), at: Math.floor(t) });
      }
      return out;
    }
    const meanSize = (workload.sessionMin + workload.sessionMax) / 2;
    const sessionsPerMs = table.total / meanSize / HOUR_MS;
    const sessionMs = workload.sessionMinutes * 60_000;
    for (let t = from + random.exponential(sessionsPerMs); t < to; t += random.exponential(sessionsPerMs)) {
      const objectId = pick(table, random);
      const size = random.int(workload.sessionMin, workload.sessionMax);
      for (let i = 0; i < size; i++) out.push({ objectId, at: Math.floor(t + random.next() * sessionMs) });
    }
    return out;
  }

  private table(log: LogKind): RateTable {
    let table = this.tables[log];
    if (!table) {
      const objectIds: Array<string | null> = [];
      const cumulative: number[] = [];
      let total = 0;
      for (const [objectId, rate] of this.rates[log]) {
        total += rate;
        objectIds.push(objectId);
        cumulative.push(total);
      }
      table = { objectIds, cumulative, total };
      this.tables[log] = table;
    }
    return table;
  }
}

function pick(table: RateTable, random: Random): string | null {
  return table.objectIds[random.weightedIndex(table.cumulative)] ?? null;
}
