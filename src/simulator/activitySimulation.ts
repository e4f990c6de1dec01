import { LOG_KINDS, type LogKind } from '../logs.js';
import { ActivityStore, type Entry, type StoredEntry } from './activityStore.js';
import { CompanyDirectory, type ObjectLog } from './companyDirectory.js';
import { EntryFactory, EntryIds } from './entryFactory.js';
import { Random, type CompanySeed } from './random.js';
import type { SimulatorOptions } from './simulatorOptions.js';
import { WorkloadModel } from './workload.js';

/**
 * Generation works in fixed chunks aligned to the start of history, each with its own random
 * stream, so the activity of a seed does not depend on how often the clock was looked at: one
 * jump over a simulated day and 288 small steps produce the same entries. A chunk is generated as
 * soon as the clock enters it; its entries stay invisible until their arrival time.
 */
export const CHUNK_MS = 5 * 60_000;

export type AppendedEntry = Partial<Entry> & { performedAt?: string | null };

/**
 * Company 0 is seeded by the simulator seed itself, so a single-company simulator gives what that
 * seed always gave; every other company gets a label no numeric seed can produce.
 */
export function companySeed(seed: number, company: number): CompanySeed {
  return company === 0 ? seed : `${seed}/company/${company}`;
}

/**
 * The data of one company: its objects, their arrival processes and every activity entry,
 * driven lazily by the clock. Transport-agnostic; the HTTP layer reads it through `store`.
 */
export class ActivitySimulation {
  readonly directory: CompanyDirectory;
  readonly workload: WorkloadModel;
  readonly store = new ActivityStore();
  private readonly factory: EntryFactory;
  private readonly ids = new EntryIds();
  private readonly appendRandom: Random;
  private readonly origin: number;
  private generatedUntil: number;

  constructor(
    private readonly options: SimulatorOptions,
    startedAt: number,
    private readonly seed: CompanySeed = options.seed,
  ) {
    this.origin = startedAt - Math.round(options.historyHours * 3_600_000);
    this.generatedUntil = this.origin;
    this.directory = new CompanyDirectory(seed, { career: options.careers, skill: options.skills }, this.origin);
    this.workload = new WorkloadModel(
      options,
      { career: this.directory.ids('career'), skill: this.directory.ids('skill') },
      (label) => Random.derive(seed, 'workload', label),
    );
    this.factory = new EntryFactory(seed, this.directory, this.ids, options);
    this.appendRandom = Random.derive(seed, 'appended');
  }

  /** Generates every chunk the clock has entered. */
  catchUp(now: number): void {
    while (this.generatedUntil <= now) {
      this.generateChunk(this.generatedUntil);
      this.generatedUntil += CHUNK_MS;
    }
  }

  visibleEntries(now: number): StoredEntry[] {
    this.catchUp(now);
    return this.store.visible(now);
  }

  /** SimulatedCompany.appendEntries; arrival defaults to the later of now and performedAt (no future entries). */
  appendEntries(
    log: LogKind,
    objectId: string | null,
    entries: readonly AppendedEntry[],
    now: number,
    arrivesAt?: number,
  ): Entry[] {
    this.requireStream(log, objectId);
    this.catchUp(now);
    return entries.map((partial) => {
      const recordedAt = this.recordedAtOf(partial, now);
      const entry = this.factory.create(log, objectId, recordedAt, this.appendRandom, {
        event: partial.event,
        applyShares: false,
      });
      for (const [field, value] of Object.entries(partial)) if (value !== undefined) entry[field] = value;
      if (typeof partial.id === 'string') this.ids.claim(partial.id);
      this.store.append({ log, objectId, entry, recordedAt, arrivesAt: arrivesAt ?? Math.max(now, recordedAt) });
      return entry;
    });
  }

  /** SimulatedCompany.appendBurst: the burst that pushes a window past the offset cap. */
  appendBurst(
    log: LogKind,
    objectId: string | null,
    count: number,
    range: { from: number; to: number },
    now: number,
  ): Entry[] {
    this.requireStream(log, objectId);
    if (!(range.to > range.from)) throw new Error('appendBurst needs range.to > range.from');
    this.catchUp(now);
    const times = Array.from(
      { length: count },
      () => range.from + Math.floor(this.appendRandom.next() * (range.to - range.from)),
    );
    times.sort((a, b) => a - b);
    const bulkGroups = new Map<string, string>();
    return times.map((recordedAt) => {
      const entry = this.factory.create(log, objectId, recordedAt, this.appendRandom, {
        applyShares: true,
        bulkGroups,
      });
      this.store.append({ log, objectId, entry, recordedAt, arrivesAt: Math.max(now, recordedAt) });
      return entry;
    });
  }

  addObject(log: ObjectLog, id: string | undefined, now: number): string {
    this.catchUp(now);
    const objectId = this.directory.add(log, id, now);
    this.workload.addObject(log, objectId);
    return objectId;
  }

  deleteObject(log: ObjectLog, id: string, now: number): void {
    this.catchUp(now);
    this.directory.delete(log, id);
    this.workload.removeObject(log, id);
    this.store.dropPending(log, id, now);
  }

  private generateChunk(start: number): void {
    const index = Math.round((start - this.origin) / CHUNK_MS);
    const { share, maxDelaySeconds } = this.options.lateArrivals;
    for (const log of LOG_KINDS) {
      const random = Random.derive(this.seed, 'chunk', log, index);
      const arrivals = this.workload.arrivals(log, start, start + CHUNK_MS, random);
      // Assignment rows of one object within a chunk may share a bulk operation.
      const bulkGroups = new Map<string, string>();
      for (const arrival of arrivals) {
        const delay = random.chance(share) ? Math.ceil(random.next() * maxDelaySeconds * 1000) : 0;
        const recordedAt = arrival.at - delay;
        const entry = this.factory.create(log, arrival.objectId, recordedAt, random, { applyShares: true, bulkGroups });
        this.store.append({ log, objectId: arrival.objectId, entry, recordedAt, arrivesAt: arrival.at });
      }
    }
  }

  private recordedAtOf(partial: AppendedEntry, now: number): number {
    if (typeof partial.performedAt !== 'string') return now;
    const at = Date.parse(partial.performedAt);
    if (Number.isNaN(at)) throw new Error(`performedAt '${partial.performedAt}' is not an ISO 8601 timestamp`);
    return at;
  }

  private requireStream(log: LogKind, objectId: string | null): void {
    if (log === 'identity_provider') {
      if (objectId !== null) throw new Error('the identity-provider log is company-wide: pass objectId null');
      return;
    }
    if (objectId === null || !this.directory.has(log, objectId)) {
      throw new Error(`no live ${log} with id '${String(objectId)}'`);
    }
  }
}
